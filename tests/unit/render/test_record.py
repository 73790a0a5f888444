"""The plan recorded in status is parsed once, by one rule, and written back the same way."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.status import TrainingTopologyStatus
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.quality import PlanQuality
from fabricfit.placement.replace import Replacement
from fabricfit.render.record import PlanRecord, plan_fields, read_plan


def test_a_complete_plan_reads_back_in_index_order() -> None:
    status = {
        "observedGeneration": 3,
        "pods": [{"index": 1, "node": "b"}, {"index": 0, "node": "a"}, {"index": 2, "node": "a"}],
        "reservation": [
            {"node": "a", "gpus": 8},
            {"node": "b", "gpus": 8},
            {"node": "a", "gpus": 8},
        ],
        "predicted": {"stepCommSeconds": 0.25},
        "fabric": "dgx-h100",
        "labelScheme": "native",
    }
    record = read_plan(status)
    assert record.pods == ("a", "b", "a") and record.nodes == ("a", "b")
    assert record.reservation == {"a": 16, "b": 8}  # entries for one node add up
    assert (record.generation, record.fabric, record.label_scheme) == (3, "dgx-h100", "native")
    assert record.step_comm_seconds == 0.25
    assert record.made_for(3) and not record.made_for(4)


def test_an_incomplete_or_garbled_plan_is_no_plan() -> None:
    gap = {"pods": [{"index": 0, "node": "a"}, {"index": 2, "node": "c"}]}
    assert read_plan(gap).pods == ()
    garbage: dict[str, Any] = {
        "pods": [{"index": "0", "node": "a"}, "x"],
        "reservation": [{"node": 3, "gpus": 8}, {"node": "a", "gpus": "8"}, None],
        "observedGeneration": "7",
        "predicted": "fast",
        "fabric": "",
    }
    assert read_plan(garbage) == PlanRecord()
    assert read_plan(None) == PlanRecord() and not PlanRecord().made_for(0)


def test_recorded_fabric_facts_read_back_only_when_complete() -> None:
    predicted = {
        "stepCommSeconds": 0.25,
        "groups": {"tensor": 4, "data": 8, "pipeline": -1, "expert": "2"},
        "spineBytesPerStep": 1.5e9,
        "tensorGroupsCrossingNvlink": 1,
        "dataGroupsCrossingRailGroup": 3,
    }
    record = read_plan({"predicted": predicted})
    assert record.groups == {"tensor": 4, "data": 8}  # bad counts skipped
    assert record.quality == PlanQuality(
        tensor_groups=4,
        tensor_groups_crossing_nvlink=1,
        data_groups=8,
        data_groups_crossing_rail_group=3,
        spine_bytes_per_step=1.5e9,
    )
    partial = {k: v for k, v in predicted.items() if k != "dataGroupsCrossingRailGroup"}
    assert read_plan({"predicted": partial}).quality is None
    assert read_plan({"predicted": {**predicted, "spineBytesPerStep": None}}).quality is None


QUALITY = PlanQuality(
    tensor_groups=2,
    tensor_groups_crossing_nvlink=0,
    data_groups=8,
    data_groups_crossing_rail_group=2,
    spine_bytes_per_step=4e8,
)


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=12), st.integers(1, 8))
def test_written_fields_read_back(pods: list[str], gpus_per_pod: int) -> None:
    groups = {"tensor": ((0, 1), (2, 3)), "data": tuple((i,) for i in range(8))}
    replacement = Replacement(
        pods=tuple(pods),
        moved={0: pods[0]} if pods else {},
        predicted=StepTimes(0.125, {"tensor": 0.1, "data": 0.025}),
        groups=groups,
        quality=QUALITY,
    )
    written = plan_fields(replacement, gpus_per_pod)
    record = read_plan(written)
    assert record.pods == tuple(pods)
    assert sum(record.reservation.values()) == len(pods) * gpus_per_pod
    assert set(record.reservation) == set(pods)
    assert record.step_comm_seconds == 0.125 and written["stepComm"] == "125ms"
    assert record.quality == QUALITY  # the new plan's facts, not the old plan's
    TrainingTopologyStatus.model_validate(written)
