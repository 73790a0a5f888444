"""`fabricfit plan --running`: plan next to the jobs a TrainingTopology dump records as
planned; the JSON and text say communication alone and with neighbours; bad dumps are one line
and exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
NODES = ROOT / "benchmarks" / "traces" / "nodes-h100-64.yaml"
RUNNING = ROOT / "tests" / "fixtures" / "running"
TTS, JOB = RUNNING / "tts.yaml", RUNNING / "dense-c.yaml"


def plan(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    argv = ["plan", "--nodes", str(NODES), "--topology", str(JOB), "--fabric", "h100-rail-only"]
    try:
        code = main([*argv, *extra])
    except SystemExit as done:
        code = int(done.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def spines(body: dict[str, Any]) -> set[str]:
    return {p["node"].split("-")[1] for p in body["pods"]}


def test_the_json_gains_the_neighbour_fields_and_the_plan_leaves_the_busy_spine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = plan(capsys, "--json")
    assert code == 0
    alone = json.loads(out)
    assert "neighbour_slowdown_seconds" not in alone["predicted"] and "running" not in alone
    code, out, _ = plan(capsys, "--json", "--running", str(TTS))
    assert code == 0
    body = json.loads(out)
    predicted = body["predicted"]
    assert predicted["neighbour_slowdown_seconds"] == 0.0
    assert predicted["slowdown_added_to_others_seconds"] == 0.0
    assert body["running"] == {
        "priced": ["team-a/moe-a", "team-a/dense-b"],
        "with_traffic": 2,
        "skipped": [],
    }
    # alone the job takes spine-0, where its ring would slow the MoE job's all-to-all
    assert spines(alone) == {"s0"} and spines(body) == {"s1"}
    # the running jobs' nodes count as held: none of them is planned again
    held = {
        p["node"] for o in yaml.safe_load(TTS.read_text())["items"] for p in o["status"]["pods"]
    }
    assert not held & {p["node"] for p in body["pods"]}


def test_the_text_says_communication_alone_and_with_neighbours(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = plan(capsys, "--running", str(TTS))
    assert code == 0
    assert "communication alone 732 ms; with neighbours 732 ms (+0 on links shared" in out
    assert "running jobs from" in out and "2 priced, 2 with traffic on shared links" in out
    code, out, _ = plan(capsys)
    assert "communication alone" not in out


def test_jobs_that_cannot_be_priced_are_skipped_and_the_planned_job_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = yaml.safe_load(TTS.read_text())
    moe, dense = dump["items"]
    dense["status"]["pods"][0]["node"] = "gone-node"
    moe["metadata"] = {"name": "dense-c", "namespace": "team-b"}  # the job being planned
    unplanned = {**dense, "metadata": {"name": "queued", "namespace": "x"}, "status": {}}
    dump["items"] = [moe, dense, unplanned]
    path = tmp_path / "tts.json"
    path.write_text(json.dumps(dump))
    code, out, _ = plan(capsys, "--json", "--running", str(path))
    assert code == 0
    running = json.loads(out)["running"]
    assert running["priced"] == [] and running["with_traffic"] == 0
    assert running["skipped"] == [
        {"name": "team-a/dense-b", "reason": "a planned node is not in the node dump"}
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("apiVersion: v1\nkind: List\nitems:\n- {kind: Pod, metadata: {name: p}}\n", "expected"),
        ("- [unclosed\n", "running file"),
    ],
)
def test_bad_dumps_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "tts.yaml"
    path.write_text(content)
    code, out, err = plan(capsys, "--running", str(path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and message in err, err


def test_a_planned_job_whose_spec_no_longer_parses_is_skipped_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tts.yaml"
    path.write_text(
        "kind: TrainingTopology\nmetadata: {name: odd, namespace: x}\nspec: 3\n"
        "status: {pods: [{index: 0, node: dgx-s0-g0-n0000}]}\n"
    )
    code, out, _ = plan(capsys, "--json", "--running", str(path))
    skipped = json.loads(out)["running"]["skipped"]
    assert code == 0 and [s["name"] for s in skipped] == ["x/odd"] and skipped[0]["reason"]


def test_a_directory_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = plan(capsys, "--running", str(tmp_path))
    assert code == 2 and out == "" and err.count("\n") == 1 and "directory" in err
