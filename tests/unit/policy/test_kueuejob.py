"""A job's Kueue Workloads read together: the job's stage, why it waits, when a group holding
quota should give it back."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from fabricfit.policy.kueuecheck import KueueWorkload, Stage
from fabricfit.policy.kueuejob import collect, job_stage, job_waiting_message, stalled

NOW = datetime(2026, 12, 3, 12, 0, 30, tzinfo=UTC)


def part(
    component: int,
    state: str = "Pending",
    *,
    reserved: bool = True,
    since: str = "2026-12-03T12:00:00Z",
    **extra: object,
) -> KueueWorkload:
    base = KueueWorkload(
        namespace="ns",
        name=f"wl-{component}",
        check="fabricfit",
        check_index=0,
        check_state=state,
        check_since=since,
        quota_reserved=reserved,
        flavors=(f"f{component % 2}",),
        component=component,
    )
    return replace(base, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("parts", "expected", "stage"),
    [
        ((part(0), part(1)), 2, Stage.PLAN),
        ((part(0, "Ready"), part(1)), 2, Stage.PLAN),
        ((part(0, "Ready"), part(1, "Ready")), 2, Stage.READY),
        ((part(0),), 2, Stage.WAITING),  # group 1 has no Workload yet
        ((part(0), part(1, reserved=False)), 2, Stage.WAITING),
        ((part(0, "Ready"), part(1, evicted="Preempted")), 2, Stage.WAITING),
        ((part(0), part(1, "Retry")), 2, Stage.DECIDED),
        ((part(0), part(1, check="")), 2, Stage.NO_CHECK),
        ((part(0, finished=True), part(1, finished=True)), 2, Stage.FINISHED),
        ((part(0, finished=True), part(1)), 2, Stage.WAITING),
        ((), 1, Stage.WAITING),
        ((part(0),), 1, Stage.PLAN),
    ],
)  # fmt: skip
def test_stage_of_the_whole_job(
    parts: tuple[KueueWorkload, ...], expected: int, stage: Stage
) -> None:
    assert job_stage(collect("LeaderWorkerSet", "ns", "s", parts, expected)) is stage


def test_components_are_ordered_deduplicated_and_their_flavors_pooled() -> None:
    found = collect("LeaderWorkerSet", "ns", "s", [part(2), part(0), part(1), part(0)], 3)
    assert [c.component for c in found.components] == [0, 1, 2]
    assert found.flavors == ("f0", "f1") and found.missing == ()
    assert collect("LeaderWorkerSet", "ns", "s", [part(1)], 3).missing == (0, 2)


def test_waiting_messages_name_what_is_missing() -> None:
    only = collect("LeaderWorkerSet", "ns", "serve", [part(0)], 3)
    assert job_waiting_message(only) == (
        "waiting for Kueue to make the Workload of LeaderWorkerSet ns/serve's component(s) 1, 2 "
        "(1 of 3 made)"
    )
    half = collect("LeaderWorkerSet", "ns", "serve", [part(0), part(1, reserved=False)], 2)
    assert job_waiting_message(half) == (
        "waiting for Kueue to reserve quota for Workload ns/wl-1; fabricfit places "
        "LeaderWorkerSet ns/serve's 2 groups together (1 of 2 hold quota)"
    )
    single = collect("Job", "ns", "train", [part(0, reserved=False)], 1)
    assert job_waiting_message(single) == "waiting for Kueue to reserve quota for Workload ns/wl-0"


def test_a_group_holding_quota_gives_it_back_after_patience_when_a_sibling_was_refused() -> None:
    refused = part(1, reserved=False, quota_refused="Pending: insufficient unused quota")
    found = collect("LeaderWorkerSet", "ns", "serve", [part(0), refused], 2)
    assert stalled(found, now=NOW, patience_seconds=60) is None  # Pending for 30 s only
    reason = stalled(found, now=NOW, patience_seconds=10)
    assert reason is not None and "component 1 of LeaderWorkerSet ns/serve" in reason
    assert "(Pending: insufficient unused quota)" in reason
    # A sibling Kueue has not tried yet (no QuotaReserved=False) is waited for.
    untried = collect("LeaderWorkerSet", "ns", "serve", [part(0), part(1, reserved=False)], 2)
    assert stalled(untried, now=NOW, patience_seconds=10) is None
    # Nothing to give back: no group holds quota with a Pending check, or a bad timestamp.
    none_held = collect("LeaderWorkerSet", "ns", "serve", [part(0, "Ready"), refused], 2)
    assert stalled(none_held, now=NOW, patience_seconds=10) is None
    garbled = collect("LeaderWorkerSet", "ns", "serve", [part(0, since="yesterday"), refused], 2)
    assert stalled(garbled, now=NOW, patience_seconds=10) is None
