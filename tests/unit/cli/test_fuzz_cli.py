"""Fuzzing ``fabricfit plan`` and ``fabricfit cost`` with hostile input (hypothesis).

The contract under test: exit 0 placed, 1 infeasible, 2 invalid input with
exactly one line on stderr and never a traceback. Most examples run ``fabricfit.cli.main.main``
in-process (an uncaught exception fails the example outright); a few run the real console
script as a subprocess to prove the same at the process boundary. The number of inputs tried is
printed on every run.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.api.constants import FABRIC_PRESETS, LABEL_SCHEMES
from fabricfit.cli.main import main

TRIED: Counter[str] = Counter()
EXITS: Counter[tuple[str, int]] = Counter()
FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)

# --- strategies ------------------------------------------------------------------------------


def mostly(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """Mostly ``valid``, sometimes ``hostile``: most examples get past the first check and reach
    the planner or the cost model, where the deeper bugs live. (Hostile on a middle value:
    hypothesis favours the bounds of an integer range.)"""
    return st.integers(0, 9).flatmap(lambda i: hostile if i == 6 else valid)


weird_text = st.one_of(
    st.text(max_size=24),
    st.sampled_from(["", " ", "\n", "-1", "0", "1e400", "NaN", "inf", "😀", "ünïcödé", "\x00"]),
)
ints = st.one_of(
    st.integers(min_value=-3, max_value=70),
    st.sampled_from([0, -1, 2**31, 2**63, 10**30, -(10**30)]),
)
scalar: st.SearchStrategy[Any] = st.one_of(
    ints, weird_text, st.booleans(), st.none(), st.floats(allow_nan=True)
)
junk: st.SearchStrategy[Any] = st.recursive(
    scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(weird_text, inner, max_size=3)
    ),
    max_leaves=6,
)
quantity = st.one_of(
    st.sampled_from(["8", "0", "-8", "4", "1e3", "8Ki", "999999999999999999999", "abc", "", "1.5"]),
    ints.map(str),
    junk,
)
label_keys = st.sampled_from(
    [
        "topology.fabricfit.dev/nvlink-domain",
        "topology.fabricfit.dev/rail-group",
        "topology.fabricfit.dev/rack",
        "topology.fabricfit.dev/spine",
        "topology.fabricfit.dev/rails",
        "topology.fabricfit.dev/fabric",
        "nvidia.com/gpu.clique",
        "fabric.topograph.run/tier-0",
        "fabric.topograph.run/tier-1",
        "accelerator.topograph.run/domain",
        "network.topology.nvidia.com/spine",
        "cloud.google.com/gce-topology-block",
        "cloud.google.com/gce-topology-subblock",
        "topology.k8s.aws/network-node-layer-1",
        "topology.k8s.aws/network-node-layer-3",
        "oci.oraclecloud.com/rdma.local_block_id",
        "ib.coreweave.cloud/leafgroup",
        "nvidia.com/gpu.count",
    ]
)
GOOD_VALUES = ["rg-0", "rg-1", "nvl-0", "rack-1", "spine-0", "8", "dgx-h100"]
label_values = st.one_of(
    st.sampled_from(["rg-0", "rg-1", "nvl-0", "8", "0", "-4", "1e9", "dgx-h100", "no-such"]),
    weird_text,
    junk,
)


@st.composite
def node(draw: st.DrawFn, index: int) -> Any:
    if draw(st.integers(0, 30)) == 17:
        return draw(junk)  # not even an object
    gpus = mostly(st.sampled_from(["8", "4"]), quantity)
    allocatable = draw(st.one_of(st.fixed_dictionaries({"nvidia.com/gpu": gpus}), junk))
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": draw(mostly(st.just(f"n{index}"), junk)),
            "labels": draw(
                mostly(
                    st.dictionaries(label_keys, mostly(st.sampled_from(GOOD_VALUES), label_values)),
                    junk,
                )
            ),
        },
        "spec": draw(
            mostly(
                st.just({}),
                st.fixed_dictionaries(
                    {"unschedulable": st.one_of(st.booleans(), junk), "taints": junk}
                ),
            )
        ),
        "status": {
            "allocatable": allocatable,
            "capacity": draw(mostly(st.just(allocatable), junk)),
            "conditions": draw(
                mostly(
                    st.just([{"type": "Ready", "status": "True"}]),
                    st.one_of(
                        st.lists(st.fixed_dictionaries({"type": weird_text, "status": junk})),
                        junk,
                    ),
                )
            ),
        },
    }
    return body


@st.composite
def node_dump(draw: st.DrawFn) -> Any:
    count = draw(st.integers(0, 8))
    items = [draw(node(i)) for i in range(count)]
    shape = draw(mostly(st.just("list"), st.sampled_from(["array", "single", "junk"])))
    if shape == "list":
        return {"apiVersion": "v1", "kind": "List", "items": items}
    if shape == "array":
        return items
    if shape == "single":
        return items[0] if items else {}
    return draw(junk)


small = mostly(st.sampled_from([1, 1, 2, 4, 8]), ints)
parallelism = mostly(
    st.fixed_dictionaries(
        {"tensor": small},
        optional={"pipeline": small, "data": small, "expert": small, "context": small},
    ),
    junk,
)
spec_fields: dict[str, st.SearchStrategy[Any]] = {
    "workloadRef": mostly(
        st.just({"apiVersion": "batch/v1", "kind": "Job", "name": "j"}),
        st.one_of(
            st.fixed_dictionaries(
                {"apiVersion": weird_text, "kind": weird_text, "name": weird_text}
            ),
            junk,
        ),
    ),
    "gpusPerPod": mostly(st.sampled_from([8, 4]), ints),
    "parallelism": parallelism,
    "rankOrder": mostly(
        st.sampled_from(["tp-cp-ep-dp-pp", "pp-dp-ep-cp-tp"]),
        st.one_of(st.sampled_from(["tp-tp", "pp-dp-tp"]), weird_text),
    ),
    "model": mostly(
        st.fixed_dictionaries(
            {},
            optional={
                "parameters": mostly(st.just(7_000_000_000), ints),
                "hiddenSize": mostly(st.just(4096), ints),
                "layers": small,
                "experts": small,
                "topK": small,
                "zeroStage": mostly(st.integers(0, 3), ints),
                "bytesPerElement": mostly(st.just(2), ints),
                "microBatches": small,
            },
        ),
        junk,
    ),
    "fabric": mostly(st.sampled_from(FABRIC_PRESETS), st.one_of(st.just("dgx-h999"), junk)),
    "labelScheme": mostly(st.sampled_from([*LABEL_SCHEMES, "klingon"]), junk),
    "placement": mostly(
        st.fixed_dictionaries(
            {},
            optional={
                "mode": st.sampled_from(["pinned", "advisory", "kueue-tas", "yolo"]),
                "tensor": st.sampled_from(["Required", "Preferred", "Maybe"]),
                "data": st.sampled_from(["Required", "Preferred", 3]),
            },
        ),
        junk,
    ),
}
spec_dict = st.fixed_dictionaries(
    {k: v for k, v in spec_fields.items() if k in ("gpusPerPod", "parallelism")},
    optional={k: v for k, v in spec_fields.items() if k not in ("gpusPerPod", "parallelism")},
)


@st.composite
def topology_doc(draw: st.DrawFn) -> Any:
    spec = draw(spec_dict)
    shape = draw(mostly(st.sampled_from(["object", "bare"]), st.sampled_from(["two", "junk"])))
    if shape == "object":
        return [{"apiVersion": "fabricfit.dev/v1alpha1", "kind": "TrainingTopology", "spec": spec}]
    if shape == "bare":
        return [spec]
    if shape == "two":
        tt = {"kind": "TrainingTopology", "spec": spec}
        return [tt, tt]
    return [draw(junk)]


def serialise(doc: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps(doc, default=str)
    return yaml.safe_dump_all(doc if isinstance(doc, list) else [doc], allow_unicode=True)


# --- running ---------------------------------------------------------------------------------


@contextlib.contextmanager
def files() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzz-cli-") as tmp:
        yield Path(tmp)


def run_inprocess(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, out.getvalue(), err.getvalue()


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
    fabric=mostly(st.sampled_from(FABRIC_PRESETS), weird_text),
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
    if fabric not in FABRIC_PRESETS or collective not in COLLECTIVES:
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
