"""The plan recorded in status is parsed once, by one rule, and written back the same way."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

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


@given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=12), st.integers(1, 8))
def test_written_fields_read_back(pods: list[str], gpus_per_pod: int) -> None:
    record = read_plan(plan_fields(pods, gpus_per_pod))
    assert record.pods == tuple(pods)
    assert sum(record.reservation.values()) == len(pods) * gpus_per_pod
    assert set(record.reservation) == set(pods)
