"""Fuzzing ``fabricfit plan`` and ``fabricfit cost`` with hostile input (hypothesis).

The contract under test: exit 0 placed, 1 infeasible, 2 invalid input with
exactly one line on stderr and never a traceback. Most examples run ``fabricfit.cli.main.main``
in-process (an uncaught exception fails the example outright); a few run the real console
script as a subprocess to prove the same at the process boundary. The number of inputs tried is
printed on every run.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.fabric.profiles import PRESETS
from fabricfit.fabric.schemes import NAMES as LABEL_SCHEMES
from unit.cli.fuzzing import (
    FUZZ,
    files,
    mostly,
    node_dump,
    run_inprocess,
    serialise,
    topology_doc,
    weird_text,
)

TRIED: Counter[str] = Counter()
EXITS: Counter[tuple[str, int]] = Counter()


def check_contract(code: int, out: str, err: str, allowed: set[int], command: str = "") -> None:
    EXITS[(command, code)] += 1
    assert code in allowed, (code, out[-500:], err[-500:])
    assert "Traceback" not in out + err
    if code == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].strip(), f"stderr must be one line: {err!r}"
    else:
        assert err == "", err
        assert out.strip(), "a result must be printed"


# --- fabricfit plan --------------------------------------------------------------------------


@FUZZ
@given(
    nodes=node_dump(),
    topology=topology_doc(),
    nodes_json=st.booleans(),
    as_json=st.booleans(),
    scheme=st.sampled_from([None, *LABEL_SCHEMES]),
)
def test_plan_never_crashes_on_hostile_documents(
    nodes: Any, topology: Any, nodes_json: bool, as_json: bool, scheme: str | None
) -> None:
    TRIED["plan"] += 1
    with files() as tmp:
        (tmp / "nodes").write_text(serialise(nodes, nodes_json), encoding="utf-8")
        (tmp / "tt").write_text(serialise(topology, False), encoding="utf-8")
        argv = ["plan", "--nodes", str(tmp / "nodes"), "--topology", str(tmp / "tt")]
        argv += ["--json"] if as_json else []
        argv += ["--label-scheme", scheme] if scheme else []
        code, out, err = run_inprocess(argv)
    check_contract(code, out, err, {0, 1, 2}, "plan")
    if code in (0, 1) and as_json:
        result = json.loads(out)
        placed = [a["node"] for a in result["assignments"]]
        assert result["feasible"] is (code == 0)
        assert len({(a["node"], a["gpu"]) for a in result["assignments"]}) == len(placed)


@pytest.mark.parametrize("key", ["\r", "a\nb", "x\u2028y", "\x0b"])
def test_plan_error_naming_a_key_with_a_line_break_is_one_line(key: str) -> None:
    """Found by the fuzzer: pydantic names the offending key, which may hold a line break."""
    TRIED["plan"] += 1
    with files() as tmp:
        (tmp / "nodes").write_text('{"kind": "List", "items": []}')
        spec = {"gpusPerPod": 8, "parallelism": {key: 1}}
        (tmp / "tt").write_text(json.dumps({"kind": "TrainingTopology", "spec": spec}))
        code, out, err = run_inprocess(
            ["plan", "--nodes", str(tmp / "nodes"), "--topology", str(tmp / "tt")]
        )
    assert code == 2
    check_contract(code, out, err, {2}, "plan")


RAW_FILES = st.one_of(
    st.binary(max_size=64),
    st.text(max_size=64).map(str.encode),
    st.sampled_from(
        [b"", b"{", b"[1,2", b"- a\n- b\n", b"items: 3", b"\xff\xfe", b"a: [", b"[" * 5000]
    ),
)


@FUZZ
@given(nodes=RAW_FILES, topology=RAW_FILES)
def test_plan_rejects_unparseable_files_in_one_line(nodes: bytes, topology: bytes) -> None:
    TRIED["plan"] += 1
    with files() as tmp:
        (tmp / "nodes").write_bytes(nodes)
        (tmp / "tt").write_bytes(topology)
        code, out, err = run_inprocess(
            ["plan", "--nodes", str(tmp / "nodes"), "--topology", str(tmp / "tt")]
        )
    check_contract(code, out, err, {0, 1, 2}, "plan-raw")


# --- fabricfit cost --------------------------------------------------------------------------

COLLECTIVES = [
    "all-reduce",
    "reduce-scatter",
    "all-gather",
    "all-to-all",
    "broadcast",
    "reduce",
    "send-recv",
]
sizes = st.one_of(
    st.sampled_from(["1GiB", "4096", "64KiB", "2GB", "0", "-1", "1.5MiB", "1PiB", "9" * 40]),
    st.sampled_from(["1e3", "GiB", "12 XB", "0.0001B", "1125899906842625", "½GiB", "１GiB"]),
    weird_text,
)
counts = st.one_of(
    st.integers(-2, 40).map(str),
    st.sampled_from(["65536", "65537", "99999999999999999999", "1.5", "x", "", "٣"]),
)


@FUZZ
@given(
    fabric=mostly(st.sampled_from(tuple(PRESETS)), weird_text),
    collective=mostly(st.sampled_from(COLLECTIVES), weird_text),
    size=mostly(st.sampled_from(["1GiB", "4096", "64KiB", "2GB", "1.5MiB"]), sizes),
    nodes=mostly(st.integers(1, 64).map(str), counts),
    gpus=mostly(st.sampled_from(["1", "4", "8"]), counts),
    nics=mostly(st.none(), counts),
    algorithm=st.sampled_from(["auto", "ring", "tree", "nvls", "bogus"]),
    as_json=st.booleans(),
)
def test_cost_never_crashes_on_hostile_arguments(
    fabric: str,
    collective: str,
    size: str,
    nodes: str,
    gpus: str,
    nics: str | None,
    algorithm: str,
    as_json: bool,
) -> None:
    TRIED["cost"] += 1
    argv = ["cost", f"--fabric={fabric}", f"--collective={collective}", f"--size={size}"]
    argv += [f"--nodes={nodes}", f"--gpus-per-node={gpus}", f"--algorithm={algorithm}"]
    argv += [f"--nics-per-node={nics}"] if nics is not None else []
    argv += ["--json"] if as_json else []
    code, out, err = run_inprocess(argv)
    check_contract(code, out, err, {0, 2}, "cost")
    if fabric not in PRESETS or collective not in COLLECTIVES:
        assert code == 2
    if code == 0 and as_json:
        result = json.loads(out)
        assert math.isfinite(result["seconds"]) and result["seconds"] >= 0
        assert result["algorithm"]


def test_cost_rejects_the_obviously_invalid() -> None:
    base = ["cost", "--fabric", "dgx-h100", "--collective", "all-reduce", "--gpus-per-node", "8"]
    for extra in (
        ["--size", "0", "--nodes", "2"],
        ["--size", "1GiB", "--nodes", "0"],
        ["--size", "1GiB", "--nodes", "-3"],
        ["--size", "1GiB", "--nodes", "99999999999"],
        ["--size", "lots", "--nodes", "2"],
        ["--size", "1GiB", "--nodes", "2", "--nics-per-node", "0"],
    ):
        TRIED["cost"] += 1
        code, out, err = run_inprocess([*base, *extra])
        assert code == 2, (extra, out, err)
        check_contract(code, out, err, {2})


# --- the real console script -----------------------------------------------------------------

SUBPROCESS_CASES = [
    ["cost", "--fabric", "nope", "--collective", "all-reduce", "--size", "1GiB", "--nodes", "2",
     "--gpus-per-node", "8"],
    ["cost", "--fabric", "dgx-h100", "--collective", "all-reduce", "--size", "-5", "--nodes", "2",
     "--gpus-per-node", "8"],
    ["cost", "--fabric", "dgx-h100", "--collective", "all-reduce", "--size", "1GiB",
     "--nodes", "10000000000", "--gpus-per-node", "8"],
    ["plan", "--nodes", "{nodes}", "--topology", "{tt}"],
    ["plan", "--nodes", "/nonexistent/nodes.yaml", "--topology", "{tt}"],
    ["plan", "--nodes", "{nodes}", "--topology", "{nodes}"],
]  # fmt: skip


@pytest.mark.parametrize("argv", SUBPROCESS_CASES, ids=lambda a: "-".join(a[:2]))
def test_console_script_fails_in_one_line(argv: list[str], tmp_path: Path) -> None:
    TRIED["subprocess"] += 1
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": [{"kind": "Node", "metadata": 7}]}))
    tt = tmp_path / "tt.yaml"
    tt.write_text("spec: {gpusPerPod: -8, parallelism: {tensor: 1e400}}\n")
    args = [a.format(nodes=nodes, tt=tt) for a in argv]
    done = subprocess.run(
        [sys.executable, "-m", "fabricfit", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_report_inputs_tried(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last in this module: print how many inputs the fuzzers above tried."""
    total = sum(TRIED.values())
    with capsys.disabled():
        print(f"\n[fuzz-cli] inputs tried: {dict(TRIED)} (total {total}); exit codes {dict(EXITS)}")
    if total:  # alone (-k), nothing ran before it
        assert TRIED["plan"] >= 1 and TRIED["cost"] >= 1
