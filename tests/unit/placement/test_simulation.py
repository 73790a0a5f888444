"""The trace replay (placement.simulation): trace validation, FIFO events, figures."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.fabric.profiles import get_profile
from fabricfit.placement.simulation import (
    PLACERS,
    Replay,
    TraceError,
    parse_trace,
    replay,
    summarize,
)
from fabricfit.placement.simulation.summary import percentile, time_mean
from unit.placement.clusters import make_cluster

PROFILE = get_profile("h100-leaf-spine-2to1")


def job(name: str, arrival: float, gpus: int, duration: float, **extra: Any) -> dict[str, Any]:
    per_pod = min(gpus, 8)
    shape = {"tensor": 8, "data": gpus // 8} if gpus > 8 else {"data": gpus}
    return {
        "name": name,
        "arrival": arrival,
        "duration": duration,
        "gpusPerPod": per_pod,
        "parallelism": shape,
        **extra,
    }


def run(jobs: list[dict[str, Any]], placer: str = "fabricfit", **cluster: int) -> Replay:
    snapshot = make_cluster(**cluster)
    return replay(
        snapshot, parse_trace({"jobs": jobs}), PROFILE, placer=PLACERS[placer], name=placer
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "a trace is a mapping with a jobs list, not a list"),
        ({"jobs": []}, "jobs must be a non-empty list"),
        ({"jobs": [1]}, "job 0: must be a mapping, not a number"),
        ({"jobs": [{"arrival": 0, "gpusPerPod": 1, "parallelism": {}}]}, "duration is required"),
        ({"jobs": [job("a", -1, 1, 10)]}, "arrival must be at least 0"),
        ({"jobs": [job("a", 0, 1, 0)]}, "duration must be positive"),
        ({"jobs": [job("a", 0, 1, 10, gpusPerPod=3)]}, "gpusPerPod 3 does not divide"),
        ({"jobs": [job("a", 0, 1, 10, colour="red")]}, "unknown field 'colour'"),
        ({"jobs": [job("a", 0, 1, 10), job("a", 1, 1, 10)]}, "job name 'a' appears twice"),
        ({"jobs": [job("a", 0, 1, 10, parallelism={"tensor": 0})]}, "parallelism.tensor"),
        ({"jobs": [job("a", 0, 1, 10, steps="many")]}, "steps must be a whole number"),
        ({"jobs": [job("a", 0, 1, 10)], "speed": 2}, "unknown top-level field 'speed'"),
    ],
)
def test_bad_traces_are_one_line_errors(document: object, message: str) -> None:
    with pytest.raises(TraceError) as err:
        parse_trace(document)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_jobs_come_out_in_arrival_order_with_default_steps() -> None:
    jobs = parse_trace({"jobs": [job("late", 50, 8, 100.4), job("early", 5, 8, 10)]})
    assert [j.name for j in jobs] == ["early", "late"]
    assert jobs[1].steps == 100 and jobs[1].gpus == 8


def test_a_job_ends_after_its_compute_plus_its_predicted_communication() -> None:
    result = run([job("j", 10, 16, 1000, steps=500)])
    (j,) = result.jobs
    assert j.start == 10 and j.wait == 0 and j.nodes == 2
    assert j.step_comm_seconds > 0
    assert j.end == pytest.approx(10 + 1000 + 500 * j.step_comm_seconds)
    assert j.comm_gpu_seconds == pytest.approx(16 * 500 * j.step_comm_seconds)


def test_strict_fifo_the_head_blocks_smaller_jobs_behind_it() -> None:
    # 8 nodes x 8 GPUs: "big" needs 48 GPUs while "first" holds 32; "small" waits behind "big"
    result = run(
        [job("first", 0, 32, 100), job("big", 1, 48, 100), job("small", 2, 8, 100)],
        rail_groups_per_spine=2,
        nodes_per_rail_group=4,
    )
    first, big, small = result.jobs
    assert first.end is not None and big.start == first.end
    assert small.start is not None and small.start >= big.start
    assert big.wait == pytest.approx(first.end - 1)


def test_jobs_that_can_never_fit_are_dropped_not_blocking() -> None:
    result = run([job("huge", 0, 512, 10), job("ok", 1, 8, 10)])
    huge, ok = result.jobs
    assert huge.start is None and huge.reason is not None and "needs 512 GPUs" in huge.reason
    assert ok.start == 1


def test_utilisation_and_fragmentation_are_sampled() -> None:
    result = run([job("a", 0, 8, 100, steps=1), job("b", 0, 1, 50, steps=1)])
    used = {s.time: s.used_gpus for s in result.samples}
    assert used[0.0] == 9
    summary = summarize(result)
    assert summary.placed == 2 and summary.unplaceable == 0
    assert 0 < summary.utilisation_mean < 1
    # 2 rail groups of 4 nodes: at time 0 one node of one rail group is whole-taken (a) and one
    # node partly (b): the best rail group keeps its 4 whole nodes
    assert result.samples[0].largest_rail_group_gpus == 32


def test_every_placer_replays_the_same_trace_deterministically() -> None:
    jobs = [job(f"j{i}", i * 5, size, 200) for i, size in enumerate((16, 8, 32, 4, 16, 8))]
    for name in PLACERS:
        assert run(jobs, name) == run(jobs, name)


def test_summary_helpers() -> None:
    assert percentile([], 0.95) == 0.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile(list(map(float, range(1, 101))), 0.95) == 95.0
    result = run([job("a", 0, 8, 100, steps=1)])
    assert time_mean(result.samples, 0.0, "used_gpus") == result.samples[-1].used_gpus
