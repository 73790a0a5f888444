"""The trace replay (placement.simulation): trace validation, FIFO events, figures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.simulation import (
    PLACERS,
    STRICT_FIFO,
    WAIT_IF_FASTER,
    Placed,
    Replay,
    TraceError,
    parse_trace,
    replay,
    summarize,
)
from fabricfit.placement.simulation.holding import LOOKAHEAD, worth_waiting
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


def held_job(steps: int, policy: str) -> Replay:
    # 2 rail groups of 4 nodes, two nodes of rail group 0 held by the dump's pods: "x" takes three
    # nodes of rail group 1; "big" (three nodes) fits now only across both rail groups, and in
    # rail group 1 alone once "x" ends
    jobs = [job("x", 0, 24, 300), job("big", 1, 24, 100, steps=steps), job("tail", 2, 8, 10)]
    return replay(
        make_cluster(used={"n000": 8, "n001": 8}),
        parse_trace({"jobs": jobs}),
        get_profile("h100-rail-only"),
        placer=PLACERS["fabricfit"],
        name="fabricfit",
        queue_policy=policy,
    )


def test_wait_if_faster_holds_the_head_until_waiting_lets_it_finish_sooner() -> None:
    fifo, held = held_job(10_000, STRICT_FIFO), held_job(10_000, WAIT_IF_FASTER)
    assert fifo.held_jobs == 0 and held.held_jobs == 1 and held.queue_policy == WAIT_IF_FASTER
    (x, big_now, _), (_, big_later, tail) = fifo.jobs, held.jobs
    assert big_now.start == 1 and big_later.start == x.end
    assert big_later.step_comm_seconds < big_now.step_comm_seconds
    assert big_later.end is not None and big_now.end is not None and big_later.end < big_now.end
    # the queue stays FIFO: the small job behind the held head waits for it
    assert tail.start is not None and big_later.start is not None
    assert tail.start >= big_later.start


def test_wait_if_faster_starts_now_when_the_wait_is_not_repaid() -> None:
    fifo, held = held_job(100, STRICT_FIFO), held_job(100, WAIT_IF_FASTER)
    assert held.held_jobs == 0 and held.jobs == fifo.jobs


def test_unknown_queue_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown queue policy 'lifo'"):
        held_job(1, "lifo")


def placed(step_comm: float) -> Placed:
    return Placed(pods=("n0",), predicted=StepTimes(step_comm_seconds=step_comm))


@pytest.mark.parametrize(
    ("releases", "later", "expected"),
    [
        ([], [], False),  # nothing running: nothing to wait for
        ([100.0], [0.5], True),  # 100 s wait saves 500 s
        ([100.0], [0.95], False),  # saves 50 s: not repaid
        ([100.0], [None], False),  # still no place after the release
        ([100.0, 200.0], [None, 0.5], True),  # the second release gives the better place
        ([500.0, 600.0], [0.9, 0.0], True),  # 600 s saves 1,000 s (500 s saved 100 s only)
        ([950.0, 960.0], [None, 0.0], False),  # 950 s ≥ 0.9 × 1,000 s of communication: stop
        ([100.0], [0.889], False),  # saves 111 s: 100 s is not under 0.9 × 111 s
        ([100.0], [0.888], True),  # saves 112 s: 0.9 × 112 s = 100.8 s > 100 s
    ],
)
def test_worth_waiting(releases: list[float], later: list[float | None], expected: bool) -> None:
    snapshot = make_cluster()
    options = dict(zip(releases, later, strict=True))
    asked: list[float] = []

    def place(at: ClusterSnapshot) -> Placed | None:
        assert at is snapshot
        comm = options[asked[-1]]
        return None if comm is None else placed(comm)

    def timeline() -> Iterator[tuple[float, ClusterSnapshot]]:
        for time in releases:
            asked.append(time)
            yield time, snapshot

    # 1,000 steps at 1 s of communication each, now = 0
    assert worth_waiting(1000, placed(1.0), 0.0, timeline(), place) is expected


def test_worth_waiting_looks_at_most_lookahead_releases_ahead() -> None:
    snapshot = make_cluster()
    calls: list[int] = []

    def place(_: ClusterSnapshot) -> Placed | None:
        calls.append(1)
        return placed(1.0) if len(calls) <= LOOKAHEAD else placed(0.0)

    timeline = ((float(i), snapshot) for i in range(1, 100))
    assert worth_waiting(1000, placed(1.0), 0.0, timeline, place) is False
    assert len(calls) == LOOKAHEAD


def test_summary_helpers() -> None:
    assert percentile([], 0.95) == 0.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile(list(map(float, range(1, 101))), 0.95) == 95.0
    result = run([job("a", 0, 8, 100, steps=1)])
    assert time_mean(result.samples, 0.0, "used_gpus") == result.samples[-1].used_gpus
