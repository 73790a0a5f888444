"""Whole-process runs of ``fabricfit`` on hostile input, under a hard memory cap.

The in-process fuzzers cannot see what only a real process shows: a terminal that cannot
encode a node name, a file that is a device or a pipe, memory that runs out. Each case here
runs ``python -m fabricfit`` as a child with its address space capped (``RLIMIT_AS``) at
:data:`MEMORY_CAP_BYTES`, so a regression that expands an alias bomb or reads ``/dev/zero``
fails the test (MemoryError, exit 2 "out of memory") instead of swapping the machine. The
child reports its own peak RSS (VmHWM) and the wall time is measured around it; the worst
rejected input is printed.
The long hypothesis run over every hostile-file class is marked ``slow`` (``make test-slow``).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from fabricfit_dev.capped import MEMORY_CAP_BYTES, CappedRun, run_capped
from unit.cli import hostile

RESULTS: list[tuple[str, int, float, float]] = []  # (case, exit, seconds, peak MiB)


def fabricfit(
    case: str, *args: str, stdin: Any = subprocess.DEVNULL, env: dict[str, str] | None = None
) -> CappedRun:
    """Run the CLI in a child process under the memory cap (``fabricfit_dev.capped``), and keep
    its figures for the report at the end."""
    run = run_capped(args, stdin=stdin, env=env)
    RESULTS.append((case, run.code, run.seconds, run.peak_mib))
    return run


def assert_clean(run: CappedRun, allowed: set[int]) -> None:
    assert run.code in allowed, (run.code, run.stderr[-800:])
    assert "Traceback" not in run.stdout + run.stderr
    assert "out of memory" not in run.stderr, run.stderr  # refused by a check, not by the cap
    if run.code == 2:
        assert run.stdout == "" and run.stderr.count("\n") == 1, run.stderr[:800]


def write(tmp: Path, name: str, data: bytes | str) -> str:
    path = tmp / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return str(path)


def plan_args(
    tmp: Path, nodes: bytes | str | None = None, tt: bytes | str | None = None
) -> list[str]:
    nodes_path = write(
        tmp, "nodes", nodes if nodes is not None else hostile.dump(hostile.nodes_doc(), True)
    )
    tt_path = write(
        tmp, "tt", tt if tt is not None else hostile.dump(hostile.topology_docs(), False)
    )
    return ["plan", "--nodes", nodes_path, "--topology", tt_path]


# --- encodings: what the terminal or the file system cannot represent --------------------


@pytest.mark.parametrize("encoding", ["ascii", "utf-8"])
def test_unencodable_node_names_reach_the_summary_and_the_svg(
    tmp_path: Path, encoding: str
) -> None:
    text = json.dumps(hostile.nodes_doc(4))
    for i, name in enumerate(["n\\udc80x", "\\u00f1\\u00f8d\\u00e9-2", "n\\ud800y", "plain"]):
        text = text.replace(f'"name": "n{i}"', f'"name": "{name}"')
    svg = tmp_path / "plan.svg"
    args = plan_args(tmp_path, nodes=text)
    for extra in ([], ["--json"], ["--svg", str(svg)]):
        run = fabricfit(f"names-{encoding}", *args, *extra, env={"PYTHONIOENCODING": encoding})
        assert_clean(run, {0})
    assert svg.stat().st_size > 0


def test_an_undecodable_path_is_one_line(tmp_path: Path) -> None:
    bad = os.fsdecode(bytes(tmp_path) + b"/\xff\xfe-nodes.yaml")
    args = plan_args(tmp_path)
    args[2] = bad
    run = fabricfit("undecodable path", *args, env={"PYTHONIOENCODING": "ascii"})
    assert_clean(run, {2})
    assert "cannot read nodes file" in run.stderr


# --- memory and size: every refusal is cheap ------------------------------------------


def bomb(levels: int) -> bytes:
    anchors = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    anchors += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    head = ("x-anchors:\n" + "".join(f"  {a}\n" for a in anchors)).encode()
    label = ("items", 0, "metadata", "labels", "a")
    return head + hostile.yaml_with(hostile.nodes_doc(), label, f"*l{levels - 1}")


MEMORY_CASES: dict[str, tuple[str, Any]] = {
    "alias bomb 10^12 in a label": ("nodes", bomb(12)),
    "alias bomb 10^30 in a label": ("nodes", bomb(30)),
    "integer of 100,000 digits": ("nodes", '{"items": [' + "9" * 100_000 + "]}"),
    "nesting 100,000 deep": ("nodes", "[" * 100_000),
    "/dev/zero as nodes": ("nodes-path", "/dev/zero"),
    "/dev/urandom as topology": ("tt-path", "/dev/urandom"),
    "a directory": ("nodes-path", "/"),
    "4,097 pods of 64 GPUs": ("tt", "gpusPerPod: 64\nparallelism: {tensor: 64, data: 4097}\n"),
    "data 10^12": ("tt", "gpusPerPod: 8\nparallelism: {tensor: 8, data: 1000000000000}\n"),
}


@pytest.mark.parametrize("case", sorted(MEMORY_CASES))
def test_hostile_input_is_refused_within_the_memory_cap(tmp_path: Path, case: str) -> None:
    where, value = MEMORY_CASES[case]
    args = plan_args(tmp_path, **({where: value} if where in ("nodes", "tt") else {}))
    if where == "nodes-path":
        args[2] = value
    elif where == "tt-path":
        args[4] = value
    run = fabricfit(case, *args)
    assert_clean(run, {2})


def test_an_oversized_file_is_refused_by_its_size(tmp_path: Path) -> None:
    args = plan_args(tmp_path)
    with Path(args[2]).open("r+b") as handle:  # sparse: no disk, 300 MiB by stat
        handle.truncate(300 * 2**20)
    run = fabricfit("300 MiB sparse file", *args)
    assert_clean(run, {2})
    assert "larger than 256 MiB" in run.stderr


def test_an_endless_pipe_on_stdin_is_cut_at_the_size_cap(tmp_path: Path) -> None:
    args = plan_args(tmp_path)
    with subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE) as source:
        run = fabricfit("endless stdin", "plan", "--nodes", "-", "--topology", args[4],
                        stdin=source.stdout)  # fmt: skip
        source.kill()
    assert_clean(run, {2})
    assert "larger than 256 MiB" in run.stderr


def test_the_largest_valid_job_on_an_empty_cluster_stays_within_the_cap(tmp_path: Path) -> None:
    tt = "gpusPerPod: 64\nparallelism: {tensor: 64, data: 4096}\n"
    run = fabricfit(
        "largest valid job, 262,144 ranks", *plan_args(tmp_path, nodes='{"items": []}', tt=tt)
    )
    assert_clean(run, {1})


# --- every hostile-file class, whole process (long) ------------------------------------


@pytest.mark.slow
@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(case=hostile.hostile_files())
def test_hostile_files_in_a_real_process(case: tuple[str, str, bytes], tmp_path: Path) -> None:
    broken, name, data = case
    paths = {
        "nodes": write(tmp_path, "nodes", hostile.dump(hostile.nodes_doc(), True)),
        "pods": write(tmp_path, "pods", hostile.dump(hostile.pods_doc(), True)),
        "topology": write(tmp_path, "tt", hostile.dump(hostile.topology_docs(), False)),
    }
    paths[broken] = write(tmp_path, f"broken-{broken}", data)
    args = [f"--{k}={v}" for k, v in paths.items()]
    run = fabricfit(f"{name}/{broken}", "plan", *args, env={"PYTHONIOENCODING": "ascii"})
    assert_clean(run, {0, 1, 2})


@pytest.fixture(scope="module", autouse=True)
def report_the_worst_rejected_input(request: pytest.FixtureRequest) -> Iterator[None]:
    """After the module (whichever of its tests ran): the inputs run and the costliest
    refusals (peak RSS, wall time), on the terminal."""
    yield
    rejected = sorted((r for r in RESULTS if r[1] == 2), key=lambda r: (-r[3], -r[2]))
    capture = request.config.pluginmanager.getplugin("capturemanager")
    if not RESULTS or capture is None:
        return
    slowest = max(rejected, key=lambda r: r[2], default=None)
    lines = [
        f"[fuzz-process] whole-process runs: {len(RESULTS)} ({len(rejected)} rejected) under a "
        f"{MEMORY_CAP_BYTES >> 20} MiB address-space cap; costliest refusals:",
        *(
            f"[fuzz-process]   {case[:44]:<44} exit {code} {peak:5.0f} MiB {seconds * 1e3:6.0f} ms"
            for case, code, seconds, peak in [*rejected[:5], *([slowest] if slowest else [])]
        ),
    ]
    with capture.global_and_fixture_disabled():
        print("\n" + "\n".join(lines))
