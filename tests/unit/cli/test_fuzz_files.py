"""Fuzzing ``fabricfit plan`` with generated hostile files, class by class (hypothesis).

Every file starts as a valid node dump, pod dump or TrainingTopology + workload and is broken
in one way from ``hostile.py``; the other two files stay valid. The contract: exit 0, 1 or 2,
never 3 (an internal error is a bug), never a traceback, and for exit 2 one line on stderr of at
most a few hundred characters. The whole-process runs (encodings of the terminal, memory caps)
are in ``test_fuzz_process.py``. The count of inputs per class is printed.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from unit.cli import hostile
from unit.cli.fuzzing import run_inprocess as run

TRIED: Counter[str] = Counter()
EXITS: Counter[tuple[str, int]] = Counter()
MAX_ERROR_CHARS = 600


def check(code: int, out: str, err: str, what: str) -> None:
    EXITS[(what, code)] += 1
    assert code in (0, 1, 2), (what, code, err[-800:])
    assert "Traceback" not in out + err
    if code == 2:
        assert out == "" and err.count("\n") == 1, (what, err[:800])
        assert len(err) <= MAX_ERROR_CHARS, (what, err[:800])
        assert "out of memory" not in err, (what, err)
    else:
        assert err == "" and out.strip(), (what, err[:800])


def write_inputs(tmp: Path, broken: str, data: bytes) -> list[str]:
    files = {
        "nodes": hostile.dump(hostile.nodes_doc(), True),
        "pods": hostile.dump(hostile.pods_doc(), True),
        "topology": hostile.dump(hostile.topology_docs(), False),
    }
    files[broken] = data
    for name, body in files.items():
        (tmp / name).write_bytes(body)
    return [f"--{n}={tmp / n}" for n in files]


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(case=hostile.hostile_files())
def test_hostile_files_of_every_class_exit_cleanly(
    case: tuple[str, str, bytes], tmp_path: Path
) -> None:
    broken, name, data = case
    TRIED[name] += 1
    files = write_inputs(tmp_path, broken, data)
    code, out, err = run(["plan", *files, "--json"])
    check(code, out, err, f"{name}/{broken}")
    if broken != "topology":  # fabricfit inspect reads the same dumps through the same reader
        code, out, err = run(["inspect", *files[:2]])
        check(code, out, err, f"inspect:{name}/{broken}")
        assert code in (0, 2)


@pytest.mark.parametrize("levels", [6, 9, 30])
def test_alias_bombs_are_refused_by_the_expansion_bound(tmp_path: Path, levels: int) -> None:
    """Found by the issue: a bomb in a label value grew to gigabytes when echoed."""
    anchors = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    anchors += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    nodes = hostile.nodes_doc()
    text = hostile.yaml_with(nodes, ("items", 0, "metadata", "labels", "a"), f"*l{levels - 1}")
    data = ("x-anchors:\n" + "".join(f"  {a}\n" for a in anchors)).encode() + text
    TRIED["alias"] += 1
    code, out, err = run(["plan", *write_inputs(tmp_path, "nodes", data)])
    check(code, out, err, "alias-label")
    if levels > 6:
        assert code == 2 and "aliases expand the document" in err


def test_report_inputs_tried(capsys: pytest.CaptureFixture[str]) -> None:
    """Runs last in this module: print how many hostile files of each class were tried."""
    with capsys.disabled():
        total = sum(TRIED.values())
        print(f"\n[fuzz-files] hostile files: {dict(TRIED)} (total {total}); exits {dict(EXITS)}")
    if TRIED:  # alone (-k), nothing ran before it
        assert set(hostile.BREAKERS) <= set(TRIED), "every class was generated"
