"""The trace replay (placement.simulation): trace validation, FIFO events, figures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.decision import StepTimes
from fabricfit.simulation import (
    PLACERS,
    STRICT_FIFO,
    WAIT_IF_FASTER,
    Placed,
    Replay,
    Rules,
    TraceError,
    parse_trace,
    replay,
    summarize,
)
from fabricfit.simulation.holding import LOOKAHEAD, Hold, hold_until, room_beside
from fabricfit.simulation.summary import percentile, time_mean
from unit.placement.clusters import make_cluster

PROFILE = get_profile("h100-leaf-spine-2to1")
RAIL_ONLY = "h100-rail-only"


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


def run(
    jobs: list[dict[str, Any]],
    placer: str = "fabricfit",
    *,
    fabric: str = PROFILE.name,
    queue_policy: str = STRICT_FIFO,
    contention: bool = False,
    **cluster: Any,
) -> Replay:
    return replay(
        make_cluster(**cluster),
        parse_trace({"jobs": jobs}),
        get_profile(fabric),
        placer=PLACERS[placer],
        name=placer,
        rules=Rules(queue_policy=queue_policy, contention=contention),
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
        ({"jobs": [job("a", 0, 1, 10, gpusPerPod=3)]}, "is not a multiple of gpusPerPod"),
        ({"jobs": [job("a", 0, 1, 10, rankOrder="pp-dp")]}, "rankOrder: is not in the expected"),
        ({"jobs": [job("a", 0, 1, 10, gpusPerPod=None)]}, "gpusPerPod: must be a whole number"),
        ({"jobs": [{"arrival": 0, "duration": 1, "parallelism": {}}]}, "gpusPerPod is required"),
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


def held_job(steps: int, policy: str, *behind: dict[str, Any]) -> Replay:
    # 2 rail groups of 4 nodes, two nodes of rail group 0 held by the dump's pods: "x" takes three
    # nodes of rail group 1; "big" (three nodes) fits now only across both rail groups, and in
    # rail group 1 alone once "x" ends; ``behind`` queue up after "big"
    jobs = [job("x", 0, 24, 300), job("big", 1, 24, 100, steps=steps), *behind]
    return run(jobs, fabric=RAIL_ONLY, queue_policy=policy, used={"n000": 8, "n001": 8})


def test_wait_if_faster_holds_the_head_until_waiting_lets_it_finish_sooner() -> None:
    fifo, held = held_job(10_000, STRICT_FIFO), held_job(10_000, WAIT_IF_FASTER)
    assert fifo.held_jobs == 0 and held.held_jobs == 1 and held.queue_policy == WAIT_IF_FASTER
    (x, big_now), (_, big_later) = fifo.jobs, held.jobs
    assert big_now.start == 1 and big_later.start == x.end
    assert big_later.step_comm_seconds < big_now.step_comm_seconds
    assert big_later.end is not None and big_now.end is not None and big_later.end < big_now.end


def test_jobs_behind_a_held_head_are_backfilled_only_where_they_do_not_delay_it() -> None:
    alone = held_job(10_000, WAIT_IF_FASTER)
    behind = [
        job("short", 2, 8, 10),  # ends long before "x": any free GPUs
        job("long", 3, 8, 100_000),  # outlives the hold: only beside the held job's reservation
        job("wide", 4, 32, 100_000),  # would need the held job's GPUs: waits, FIFO, behind it
    ]
    result = held_job(10_000, WAIT_IF_FASTER, *behind)
    (x, big, short, long, wide), big_alone = result.jobs, alone.jobs[1]
    assert result.held_jobs == 1 and result.backfilled_jobs == 2
    assert [j.name for j in result.jobs if j.held] == ["big"]
    assert [j.name for j in result.jobs if j.backfilled] == ["short", "long"]
    assert short.start == 2 and long.start == 3
    # the held job starts when it would have, on as good a placement
    assert big.start == x.end == big_alone.start
    assert big.step_comm_seconds == big_alone.step_comm_seconds
    assert wide.start is not None and big.start is not None and wide.start >= big.start
    # under strict FIFO nothing overtakes the head
    fifo = held_job(10_000, STRICT_FIFO, *behind)
    assert fifo.backfilled_jobs == 0
    assert all(j.start is not None and j.start >= fifo.jobs[1].start for j in fifo.jobs[2:])


def test_wait_if_faster_starts_now_when_the_wait_is_not_repaid() -> None:
    fifo, held = held_job(100, STRICT_FIFO), held_job(100, WAIT_IF_FASTER)
    assert held.held_jobs == 0 and held.jobs == fifo.jobs


def test_unknown_queue_policy_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown queue policy 'lifo'"):
        held_job(1, "lifo")


def placed(step_comm: float, pods: tuple[str, ...] = ("n0",)) -> Placed:
    return Placed(pods=pods, predicted=StepTimes(step_comm_seconds=step_comm))


@pytest.mark.parametrize(
    ("releases", "later", "expected"),
    [
        ([], [], None),  # nothing running: nothing to wait for
        ([100.0], [0.5], 100.0),  # 100 s wait saves 500 s
        ([100.0], [0.95], None),  # saves 50 s: not repaid
        ([100.0], [None], None),  # still no place after the release
        ([100.0, 200.0], [None, 0.5], 200.0),  # the second release gives the better place
        ([500.0, 600.0], [0.9, 0.0], 600.0),  # 600 s saves 1,000 s (500 s saved 100 s only)
        ([950.0, 960.0], [None, 0.0], None),  # 950 s ≥ 0.9 × 1,000 s of communication: stop
        ([100.0], [0.889], None),  # saves 111 s: 100 s is not under 0.9 × 111 s
        ([100.0], [0.888], 100.0),  # saves 112 s: 0.9 × 112 s = 100.8 s > 100 s
    ],
)
def test_hold_until(
    releases: list[float], later: list[float | None], expected: float | None
) -> None:
    snapshot = make_cluster()
    options = dict(zip(releases, later, strict=True))
    asked: list[float] = []

    def place(at: ClusterSnapshot) -> Placed | None:
        assert at is snapshot
        comm = options[asked[-1]]
        return None if comm is None else placed(comm, (f"at-{asked[-1]:.0f}",))

    def timeline() -> Iterator[tuple[float, ClusterSnapshot]]:
        for time in releases:
            asked.append(time)
            yield time, snapshot

    # 1,000 steps at 1 s of communication each, now = 0
    hold = hold_until(1000, placed(1.0), 0.0, timeline(), place)
    if expected is None:
        assert hold is None
    else:
        assert hold is not None and hold.until == expected
        assert hold.placed.pods == (f"at-{expected:.0f}",)  # the placement then is reserved


def test_hold_until_looks_at_most_lookahead_releases_ahead() -> None:
    snapshot = make_cluster()
    calls: list[int] = []

    def place(_: ClusterSnapshot) -> Placed | None:
        calls.append(1)
        return placed(1.0) if len(calls) <= LOOKAHEAD else placed(0.0)

    timeline = ((float(i), snapshot) for i in range(1, 100))
    assert hold_until(1000, placed(1.0), 0.0, timeline, place) is None
    assert len(calls) == LOOKAHEAD


def test_a_hold_reserves_its_placement_gpus_per_node() -> None:
    hold = Hold(10.0, placed(0.1, ("a", "a", "b")))
    assert hold.reserved(4) == {"a": 8, "b": 4}


@pytest.mark.parametrize(
    ("now", "then", "reserved", "room"),
    [
        (8, 8, 0, 8),  # untouched by the hold
        (8, 8, 8, 0),  # the held job takes the whole node
        (8, 8, 4, 4),  # and half of it
        (0, 8, 4, 0),  # nothing free now
        (4, 8, 8, 0),  # free now, but the held job needs all of it when the hold ends
        (2, 8, 4, 2),  # a running job frees 6 by then: 4 reserved, 2 to spare, 2 free now
        (8, 3, 8, 0),  # never negative
    ],
)
def test_room_beside_a_reservation(now: int, then: int, reserved: int, room: int) -> None:
    assert room_beside({"a": now}, {"a": then}, {"a": reserved} if reserved else {}) == {"a": room}


def test_summary_helpers() -> None:
    assert percentile([], 0.95) == 0.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile(list(map(float, range(1, 101))), 0.95) == 95.0
    result = run([job("a", 0, 8, 100, steps=1)])
    assert time_mean(result.samples, 0.0, "used_gpus") == result.samples[-1].used_gpus


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    # crowded and multi-node, so that split placements, holds and backfills all come up
    for i in range(draw(st.integers(1, 12))):
        gpus = draw(st.sampled_from([1, 8, 16, 24, 24, 32]))
        out.append(
            job(
                f"j{i}",
                draw(st.integers(0, 300)),
                gpus,
                draw(st.integers(1, 600)),
                steps=draw(st.sampled_from([1, 1000, 20_000])),
            )
        )
    return sorted(out, key=lambda j: j["arrival"])


@settings(max_examples=80, deadline=None)
@given(trace=traces(), policy=st.sampled_from([STRICT_FIFO, WAIT_IF_FASTER]))
def test_any_trace_replays_within_capacity(trace: list[dict[str, Any]], policy: str) -> None:
    # over-committing a node raises inside the replay; here: every job ends, in order
    result = run(trace, fabric=RAIL_ONLY, queue_policy=policy, used={"n000": 8, "n001": 4})
    assert all(0 <= s.used_gpus <= result.total_gpus for s in result.samples)
    for one in result.jobs:
        assert (one.start is None) == (one.reason is not None)
        if one.start is not None:
            assert one.end is not None and one.arrival <= one.start < one.end
    if policy == STRICT_FIFO:
        assert result.held_jobs == result.backfilled_jobs == 0
        starts = [r.start for r in result.jobs if r.start is not None]
        assert starts == sorted(starts)  # nobody overtakes under strict FIFO


def test_with_contention_a_start_slows_itself_and_the_job_it_shares_links_with() -> None:
    """Two half-node jobs spread over two one-NIC nodes share every NIC and leaf uplink: with
    contention the second pays the first's traffic, and the first's end moves later."""
    jobs = [
        job("a", 0, 8, 100, gpusPerPod=4, parallelism={"tensor": 4, "data": 2}),
        job("b", 1, 8, 100, gpusPerPod=4, parallelism={"tensor": 4, "data": 2}),
    ]
    shape: dict[str, Any] = {"rail_groups_per_spine": 2, "nodes_per_rail_group": 1, "rails": 1}
    off = run(jobs, "spread", fabric=RAIL_ONLY, **shape)
    on = run(jobs, "spread", fabric=RAIL_ONLY, contention=True, **shape)
    assert (off.contention, on.contention) == (False, True)
    a_off, b_off = off.jobs
    a_on, b_on = on.jobs
    assert a_off.contention_gpu_seconds == b_off.contention_gpu_seconds == 0.0
    assert b_on.step_comm_seconds > b_off.step_comm_seconds  # b priced next to a
    assert b_on.contention_gpu_seconds == pytest.approx(
        8 * 100 * (b_on.step_comm_seconds - b_off.step_comm_seconds)
    )
    assert a_on.step_comm_seconds == a_off.step_comm_seconds  # a started alone...
    assert a_on.end is not None and a_off.end is not None and a_on.end > a_off.end  # ...b slowed it
    assert a_on.comm_gpu_seconds - a_off.comm_gpu_seconds == pytest.approx(
        a_on.contention_gpu_seconds
    )
    assert a_on.contention_gpu_seconds == pytest.approx(8 * (a_on.end - a_off.end))
    assert summarize(on).contention_gpu_seconds == pytest.approx(
        a_on.contention_gpu_seconds + b_on.contention_gpu_seconds
    )
    assert a_on.shares_links and b_on.shares_links and not a_off.shares_links
    assert on.busiest_link_share > 0 and off.busiest_link_share == 0.0
