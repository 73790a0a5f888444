"""Status models: a full status round-trips through its JSON body and validates against the
generated status schema; the summary is derived from the conditions; conditions behave like
``meta.SetStatusCondition``; kopf's bookkeeping survives and unknown fields are tolerated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from fabricfit.api.planstatus import DimensionSeconds, NodeReservation, PodPlacement, Prediction
from fabricfit.api.status import (
    Condition,
    Summary,
    TrainingTopologyStatus,
    find_condition,
    rfc3339,
    set_condition,
    summarize,
)
from unit.api.apiserver import schema_errors

T0 = "2026-12-02T10:00:00Z"
T1 = "2026-12-02T10:05:00Z"


def cond(type_: str, status: str, reason: str = "Done", at: str = T0) -> Condition:
    return Condition.model_validate(
        {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": f"{type_} is {status}.",
            "lastTransitionTime": at,
            "observedGeneration": 3,
        }
    )


def full_status() -> TrainingTopologyStatus:
    return TrainingTopologyStatus(
        observed_generation=3,
        conditions=(cond("Planned", "True", "PlanFound"), cond("Placed", "True", "PodsPinned")),
        workload="Job/llama-70b",
        world_size=16,
        pods=(PodPlacement(index=0, node="gpu-a-0"), PodPlacement(index=1, node="gpu-a-1")),
        reservation=(
            NodeReservation(node="gpu-a-0", gpus=8),
            NodeReservation(node="gpu-a-1", gpus=8),
        ),
        predicted=Prediction(
            step_comm_seconds=0.75, by_dimension=DimensionSeconds(tensor=0.5, data=0.25)
        ),
        lower_bound_seconds=0.6,
        efficiency=0.8,
        reasons=("data: peers span 2 rail groups",),
        degraded_ranks=(),
        fabric="dgx-h100",
        label_scheme="native",
        planned_at=T0,
        kopf={"progress": {"reconcile": {"retries": 0}}},
    )


def test_round_trip_and_schema(status_schema: dict[str, Any]) -> None:
    status = full_status()
    body = status.to_body()
    assert body["summary"] == "Placed"
    assert body["predicted"] == {
        "stepCommSeconds": 0.75,
        "byDimension": {
            "tensor": 0.5,
            "context": 0.0,
            "expert": 0.0,
            "data": 0.25,
            "pipeline": 0.0,
        },
    }
    assert body["pods"][1] == {"index": 1, "node": "gpu-a-1"}
    assert body["conditions"][0]["lastTransitionTime"] == T0
    assert schema_errors(status_schema, body) == []
    assert TrainingTopologyStatus.model_validate(body) == status


def test_patch_bodies_carry_only_what_was_set(status_schema: dict[str, Any]) -> None:
    assert TrainingTopologyStatus().to_body() == {}
    reserve = TrainingTopologyStatus(reservation=(NodeReservation(node="gpu-a-0", gpus=8),))
    assert reserve.to_body() == {"reservation": [{"node": "gpu-a-0", "gpus": 8}]}
    release = TrainingTopologyStatus(reservation=(), summary="Placed")
    assert release.to_body() == {"reservation": []}
    planned = TrainingTopologyStatus(conditions=(cond("Planned", "False", "InsufficientGPUs"),))
    assert set(planned.to_body()) == {"conditions", "summary"}
    assert planned.to_body()["summary"] == "Waiting"
    predicted = TrainingTopologyStatus(predicted=Prediction(step_comm_seconds=1.0))
    assert predicted.to_body()["predicted"]["byDimension"] == dict.fromkeys(
        ("tensor", "context", "expert", "data", "pipeline"), 0.0
    )
    for status in (reserve, release, planned, predicted):
        assert schema_errors(status_schema, status.to_body()) == []


def test_unknown_fields_are_ignored_and_kopf_is_kept() -> None:
    body = {**full_status().to_body(), "reconcile": {"message": "handler result"}}
    status = TrainingTopologyStatus.model_validate(body)
    assert status.kopf == {"progress": {"reconcile": {"retries": 0}}}
    assert "reconcile" not in status.to_body()


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("reason", "Not CamelCase"),
        ("reason", ""),
        ("status", "Maybe"),
        ("message", "x" * 32769),
        ("observedGeneration", -1),
        ("type", "-Planned"),
        ("lastTransitionTime", "today"),
        ("lastTransitionTime", "2026-12-02 10:00:00"),
    ],
)
def test_condition_rejects_what_metav1_rejects(
    field: str, value: Any, status_schema: dict[str, Any]
) -> None:
    body = {**cond("Planned", "True").model_dump(by_alias=True), field: value}
    with pytest.raises(ValidationError):
        Condition.model_validate(body)
    assert schema_errors(status_schema["properties"]["conditions"]["items"], body)


@pytest.mark.parametrize(
    ("conditions", "expected"),
    [
        ((), "Pending"),
        ((cond("Planned", "Unknown"),), "Pending"),
        ((cond("Planned", "True"),), "Planned"),
        ((cond("Planned", "True"), cond("Placed", "False")), "Planned"),
        ((cond("Planned", "True"), cond("Placed", "True")), "Placed"),
        ((cond("Placed", "True"), cond("Degraded", "True")), "Degraded"),
        ((cond("Placed", "True"), cond("Degraded", "False")), "Placed"),
        ((cond("Planned", "False", "InsufficientGPUs"),), "Waiting"),
        ((cond("Planned", "False", "WorkloadNotFound"),), "Waiting"),
        ((cond("Planned", "False", "InvalidSpec"),), "Invalid"),
        ((cond("Planned", "False", "UnsupportedWorkload"),), "Invalid"),
    ],
)
def test_summary_is_derived_from_conditions(
    conditions: tuple[Condition, ...], expected: Summary
) -> None:
    assert summarize(conditions) == expected
    given = TrainingTopologyStatus.model_validate({"conditions": conditions, "summary": "Invalid"})
    assert given.summary == expected


def test_set_condition_keeps_transition_time_while_status_holds() -> None:
    start = (cond("Planned", "True", "PlanFound", T0), cond("Placed", "False", "Gated", T0))
    same = set_condition(start, cond("Placed", "False", "StillGated", T1))
    assert find_condition(same, "Placed") == cond("Placed", "False", "StillGated", T0)
    flipped = set_condition(same, cond("Placed", "True", "PodsPinned", T1))
    placed = find_condition(flipped, "Placed")
    assert placed is not None and placed.last_transition_time == T1
    assert [c.type for c in flipped] == ["Planned", "Placed"]
    added = set_condition(flipped, cond("Degraded", "True", "NodeNotReady", T1))
    assert [c.type for c in added] == ["Planned", "Placed", "Degraded"]
    assert start == (cond("Planned", "True", "PlanFound", T0), cond("Placed", "False", "Gated", T0))


def test_rfc3339_is_utc_whole_seconds() -> None:
    moment = datetime(2026, 12, 2, 12, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert rfc3339(moment) == "2026-12-02T10:00:00Z"
    assert rfc3339(datetime(2026, 1, 1, tzinfo=UTC)) == "2026-01-01T00:00:00Z"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("efficiency", 1.5),
        ("lowerBoundSeconds", -0.1),
        ("conditions", [cond(f"T{i}", "True").model_dump(by_alias=True) for i in range(17)]),
        ("reasons", ["r"] * 33),
        ("degradedRanks", [-1]),
        ("plannedAt", "yesterday"),
    ],
)
def test_status_bounds(field: str, value: Any, status_schema: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TrainingTopologyStatus.model_validate({field: value})
    assert schema_errors(status_schema, {field: value})
