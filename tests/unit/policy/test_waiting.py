"""What the operator reads of Kueue to wait for a better placement, and the room it leaves."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from fabricfit.fabric.topology import ClusterSnapshot, FabricPlace, NodeInfo
from fabricfit.policy.waiting import (
    HOLD_GRACE_SECONDS,
    HeldPlacement,
    Saving,
    beside_hold,
    declared_end,
    declared_run_seconds,
    hold_message,
    job_end,
    job_run_seconds,
    queue_policy,
)

ADMITTED = "2026-12-05T10:00:00Z"
ADMITTED_EPOCH = datetime(2026, 12, 5, 10, tzinfo=UTC).timestamp()


def workload(
    limit: Any = None, spent: Any = None, admitted: str | None = ADMITTED
) -> dict[str, Any]:
    spec = {} if limit is None else {"maximumExecutionTimeSeconds": limit}
    status: dict[str, Any] = {"conditions": [{"type": "QuotaReserved", "status": "True"}]}
    if admitted is not None:
        status["conditions"].append(
            {"type": "Admitted", "status": "True", "lastTransitionTime": admitted}
        )
    if spent is not None:
        status["accumulatedPastExecutionTimeSeconds"] = spent
    return {"spec": spec, "status": status}


@pytest.mark.parametrize(
    ("body", "run", "end"),
    [
        (workload(600), 600.0, ADMITTED_EPOCH + 600),
        (workload(600, spent=100), 500.0, ADMITTED_EPOCH + 500),  # an earlier admission
        (workload(600, spent=900), 0.0, ADMITTED_EPOCH),
        (workload(600, admitted=None), 600.0, None),  # not running: no end yet
        (workload(), None, None),  # declares nothing: never ends, for the policy
        (workload(0), None, None),
        (workload("600"), None, None),
        (workload(True), None, None),
        (workload(600, admitted="yesterday"), 600.0, None),
    ],
)
def test_declared_run_and_end_follow_kueue_s_max_execution_time(
    body: dict[str, Any], run: float | None, end: float | None
) -> None:
    assert declared_run_seconds(body) == run
    assert declared_end(body) == end


def test_a_job_of_several_workloads_ends_with_the_last_and_only_if_all_declare() -> None:
    assert job_end([workload(600), workload(900)]) == ADMITTED_EPOCH + 900
    assert job_end([workload(600), workload()]) is None
    assert job_end([]) is None
    assert job_run_seconds([workload(600), workload(900)]) == 900.0
    assert job_run_seconds([workload(600), workload()]) is None


def test_the_spec_s_queue_policy_wins_over_the_operator_s() -> None:
    assert queue_policy(None, "wait-if-faster") == "wait-if-faster"
    assert queue_policy("strict-fifo", "wait-if-faster") == "strict-fifo"
    assert queue_policy(None, "") == "strict-fifo"


HOLD = HeldPlacement(until=1000.0, reserved={"a": 8, "b": 8}, freed={"a": 8})


@pytest.mark.parametrize(
    ("free", "ends", "kept"),
    [
        ({"a": 0, "b": 8, "c": 8}, None, {"b": 8}),  # runs past: b is the held job's
        ({"a": 0, "b": 8, "c": 8}, 1000.0, {}),  # ends by the hold: anything goes
        ({"a": 0, "b": 8, "c": 8}, 1001.0, {"b": 8}),
        ({"a": 0, "b": 4}, None, {"b": 4}),  # b's 4 free now are needed at 1000 too
    ],
)
def test_a_job_running_past_a_hold_leaves_the_held_gpus_alone(
    free: dict[str, int], ends: float | None, kept: dict[str, int]
) -> None:
    assert beside_hold(HOLD, free, ends) == kept


def test_a_hold_is_honoured_until_its_instant_and_a_grace_period() -> None:
    assert HOLD.current(1000.0 + HOLD_GRACE_SECONDS - 1)
    assert not HOLD.current(1000.0 + HOLD_GRACE_SECONDS)


def test_the_message_names_the_placement_waited_for_and_what_it_saves() -> None:
    def node(name: str, group: str) -> NodeInfo:
        place = FabricPlace(nvlink_domain=name, rail_group=group, spine="s")
        return NodeInfo(name=name, gpus=8, free_gpus=8, rails=8, place=place)

    snapshot = ClusterSnapshot((node("a", "rg-0"), node("b", "rg-0"), node("c", "rg-1")))
    saving = Saving(wait_seconds=42.4, per_step_seconds=0.155, saved_seconds=1698.2,
                    run_seconds=3600)  # fmt: skip
    assert hold_message(snapshot, ["a", "c"], ["a", "b"], saving) == (
        "waiting 42 s for 2 pods on rg-0 ×2 (now: rg-0 ×1, rg-1 ×1): 0.155 s less "
        "communication per step, 1698 step-seconds saved over its declared run of 3600 s"
    )
