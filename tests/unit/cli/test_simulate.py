"""`fabricfit simulate`: the shipped traces replay with every placer, text and JSON agree,
and bad input is one line on stderr with exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fabricfit.cli.main import main

TRACES = Path(__file__).resolve().parents[3] / "benchmarks" / "traces"
NODES = TRACES / "nodes-h100-64.yaml"
SMALL = TRACES / "small.yaml"


def simulate(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    assert main(["simulate", "--nodes", str(NODES), "--trace", str(SMALL), "--json", *extra]) == 0
    body: dict[str, object] = json.loads(capsys.readouterr().out)
    return body


def test_readme_example_prints_a_table_per_placer_and_a_comparison(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(
        ["simulate", "--nodes", str(NODES), "--trace", str(SMALL), "--fabric", "h100-rail-only"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("fabric h100-rail-only: --fabric names it")
    for placer in ("fabricfit", "kueue-bestfit", "spread"):
        assert f"placer {placer}\n" in out
        assert any(line.startswith(placer) for line in out.splitlines()[-3:])
    assert "dense-70b-128" in out and "wait p95 s" in out


def test_json_carries_per_job_figures_and_series(capsys: pytest.CaptureFixture[str]) -> None:
    body = simulate(capsys, "--fabric", "h100-leaf-spine-2to1")
    placers = body["placers"]
    assert isinstance(placers, dict) and list(placers) == ["fabricfit", "kueue-bestfit", "spread"]
    for run in placers.values():
        assert run["summary"]["placed"] == 10 and run["totalGpus"] == 512
        assert run["jobs"][0]["name"] == "notebook-a"
        times = [t for t, _ in run["utilisation"]]
        assert times == sorted(times) and all(0 <= u <= 1 for _, u in run["utilisation"])
        assert all(0 <= g <= 128 for _, g in run["largestRailGroupGpus"])
    ours, spread = placers["fabricfit"]["summary"], placers["spread"]["summary"]
    # the topology-blind spread pays for it on a 2:1 fabric: more communication, more spine bytes
    assert ours["commGpuSeconds"] < spread["commGpuSeconds"]
    assert ours["spineBytes"] < spread["spineBytes"]


def test_queue_policy_applies_to_fabricfit_only_and_is_reported(
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = TRACES / "published-mix.yaml"
    argv = ["simulate", "--nodes", str(NODES), "--trace", str(trace), "--fabric", "h100-rail-only"]
    assert main([*argv, "--json"]) == 0
    fifo = json.loads(capsys.readouterr().out)["placers"]
    assert main([*argv, "--json", "--queue-policy", "wait-if-faster"]) == 0
    held = json.loads(capsys.readouterr().out)["placers"]
    before, after = fifo["fabricfit"], held["fabricfit"]
    assert before["queuePolicy"] == "strict-fifo" and before["heldJobs"] == 0
    assert after["queuePolicy"] == "wait-if-faster" and after["heldJobs"] > 0
    # the peers cannot price a placement: they stay strictly FIFO, their replay unchanged
    for peer in ("kueue-bestfit", "spread"):
        assert held[peer] == fifo[peer] and held[peer]["queuePolicy"] == "strict-fifo"
    # some job waited for a cheaper placement and still ended sooner than under strict FIFO
    ends = {j["name"]: j["end"] for j in fifo["fabricfit"]["jobs"]}
    waited = [
        j
        for j in held["fabricfit"]["jobs"]
        if j["waitSeconds"] > 0 and j["stepCommSeconds"] < 0.99 * _step(fifo, j["name"])
    ]
    assert waited and any(j["end"] < ends[j["name"]] for j in waited)
    assert main([*argv, "--queue-policy", "wait-if-faster", "--placer", "fabricfit"]) == 0
    out = capsys.readouterr().out
    count, filled = after["heldJobs"], after["backfilledJobs"]
    assert count > 1 and filled > 0 and before["backfilledJobs"] == 0
    assert (
        f"placer fabricfit (queue wait-if-faster), {count} jobs held, {filled} backfilled\n" in out
    )
    # each job says whether it was held or backfilled, in JSON and on its text row
    assert sum(j["held"] for j in after["jobs"]) == count
    assert sum(j["backfilled"] for j in after["jobs"]) == filled
    assert not any(j["held"] or j["backfilled"] for j in before["jobs"])
    assert out.count("  held\n") == count and out.count("  backfilled\n") == filled


def _step(placers: dict[str, Any], name: str) -> float:
    (job,) = [j for j in placers["fabricfit"]["jobs"] if j["name"] == name]
    return float(job["stepCommSeconds"])


def test_readme_generated_trace_with_one_placer(capsys: pytest.CaptureFixture[str]) -> None:
    trace = TRACES / "published-mix.yaml"
    argv = ["simulate", "--nodes", str(NODES), "--trace", str(trace), "--placer", "kueue-bestfit"]
    assert main([*argv, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert list(body["placers"]) == ["kueue-bestfit"]
    assert body["fabric"] == "dgx-h100"  # the nodes' own label
    summary = body["placers"]["kueue-bestfit"]["summary"]
    assert summary["placed"] + summary["unplaceable"] == 240 and summary["placed"] > 200


def test_readme_gb200_trace_replays_on_the_nvl72_trays(capsys: pytest.CaptureFixture[str]) -> None:
    nodes, trace = TRACES / "nodes-gb200-144.yaml", TRACES / "published-mix-nvl72.yaml"
    argv = ["simulate", "--nodes", str(nodes), "--trace", str(trace), "--placer", "fabricfit"]
    assert main([*argv, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["fabric"] == "gb200-nvl72"  # the trays' own label
    run = body["placers"]["fabricfit"]
    assert run["totalGpus"] == 576 and run["summary"]["placed"] == 240
    for job in run["jobs"]:  # a pod is at most one tray: a job of G GPUs spans >= G/4 trays
        assert job["nodes"] >= -(-job["gpus"] // 4)


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "trace.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("trace", "message"),
    [
        (
            "jobs: [{arrival: 0, duration: 10, gpusPerPod: 8, parallelism: {data: 12}}]",
            "is not a multiple of gpusPerPod",
        ),
        # rank orders plan refuses (simulate replayed the first and exit 3 on the others)
        (
            "jobs: [{arrival: 0, duration: 10, gpusPerPod: 8, parallelism: {tensor: 8, data: 2},"
            " rankOrder: dp-tp}]",
            "rankOrder: is not in the expected form, got 'dp-tp'",
        ),
        (
            "jobs: [{arrival: 0, duration: 10, gpusPerPod: 8, parallelism: {tensor: 8},"
            " rankOrder: tp-tp-dp-pp-cp}]",
            "rankOrder must name each of tp, cp, ep, dp, pp exactly once",
        ),
        (
            "jobs: [{arrival: 0, duration: 10, gpusPerPod: 8, parallelism: {tensor: 8},"
            " rankOrder: TP-CP-EP-DP-PP}]",
            "rankOrder: is not in the expected form",
        ),
        (
            "jobs: [{arrival: 0, duration: 10, gpusPerPod: 8, parallelism: {tensor: 8},"
            " rankOrder: 7}]",
            "rankOrder: must be a string, got 7",
        ),
        ("jobs: nope", "jobs must be a non-empty list"),
        ("- a\n- b\n", "is a string"),
        ("a: 1\n---\nb: 2\n", "expected one mapping with a jobs list"),
        ("jobs: [{arrival: x, duration: 1, gpusPerPod: 1, parallelism: {}}]", "arrival must be"),
        ("{{{", "invalid JSON"),
        ("jobs: [\n", "invalid YAML"),
    ],
)
def test_bad_trace_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], trace: str, message: str
) -> None:
    code = main(["simulate", "--nodes", str(NODES), "--trace", write(tmp_path, trace)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and message in err and err.startswith("fabricfit simulate:")


def exit_code(argv: list[str]) -> int:
    """``main``'s code; argparse errors leave through SystemExit with the same code."""
    try:
        return main(argv)
    except SystemExit as done:
        return int(done.code or 0)


def test_bad_flags_and_files_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        ["--nodes", str(tmp_path / "missing.yaml"), "--trace", str(SMALL)],
        ["--nodes", str(NODES), "--trace", str(SMALL), "--placer", "volcano"],
        ["--nodes", str(NODES), "--trace", str(SMALL), "--queue-policy", "lifo"],
        ["--nodes", str(NODES), "--trace", str(SMALL), "--contention", "maybe"],
        ["--nodes", str(NODES), "--trace", str(SMALL), "--fabric", "dgx-h999"],
        ["--nodes", str(SMALL), "--trace", str(SMALL)],
    ]
    for argv in cases:
        assert exit_code(["simulate", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1, (argv, err)


def test_contention_is_on_by_default_and_can_be_turned_off(
    capsys: pytest.CaptureFixture[str],
) -> None:
    on = simulate(capsys, "--placer", "fabricfit")["placers"]
    off = simulate(capsys, "--placer", "fabricfit", "--contention", "off")["placers"]
    assert isinstance(on, dict) and isinstance(off, dict)
    assert on["fabricfit"]["contention"] is True and off["fabricfit"]["contention"] is False
    assert off["fabricfit"]["summary"]["contentionGpuSeconds"] == 0.0
    assert (
        main(["simulate", "--nodes", str(NODES), "--trace", str(SMALL), "--placer", "spread"]) == 0
    )
    assert "; contention on\n" in capsys.readouterr().out


def test_a_trace_job_is_refused_with_the_words_plan_refuses_its_spec_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Trace jobs go through plan's spec rules (policy.parse_spec): the same refusal, the same
    sentence, for every rank order plan refuses."""
    for order in ("dp-tp", "tp-tp-dp-pp-cp", "xx", "", "tp,cp,ep,dp,pp", "tp-cp-ep-dp-pp-tp"):
        spec = {"gpusPerPod": 8, "parallelism": {"tensor": 8, "data": 2}, "rankOrder": order}
        topology = tmp_path / "tt.yaml"
        topology.write_text(json.dumps({"spec": spec}), encoding="utf-8")
        assert main(["plan", "--nodes", str(NODES), "--topology", str(topology)]) == 2
        plan_says = (
            capsys.readouterr().err.split(": spec", 1)[1].removeprefix(".").removeprefix(": ")
        )
        job = {"name": "j", "arrival": 0, "duration": 10, **spec}
        trace = write(tmp_path, json.dumps({"jobs": [job]}))
        assert main(["simulate", "--nodes", str(NODES), "--trace", trace]) == 2, order
        simulate_says = capsys.readouterr().err
        assert simulate_says.endswith(f"job 0 ('j'): {plan_says}"), (order, simulate_says)
