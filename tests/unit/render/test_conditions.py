"""Conditions as dicts: metav1.Condition shape, transition times, summary and transitions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.status import Condition, TrainingTopologyStatus
from fabricfit.render.conditions import (
    find_condition,
    is_true,
    set_condition,
    summarize,
    timestamp,
    transitions,
)

T0 = "2026-12-02T10:00:00Z"
T1 = datetime(2026, 12, 2, 11, 30, 15, 999, tzinfo=UTC)
T1_TEXT = "2026-12-02T11:30:15Z"


def cond(
    type_: str, status: str, reason: str = "R", time: str = T0, gen: int = 1
) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": "",
        "lastTransitionTime": time,
        "observedGeneration": gen,
    }


def test_set_new_condition_appends_in_metav1_shape() -> None:
    before = [cond("Planned", "True")]
    after = set_condition(
        before,
        type="Placed",
        status="False",
        reason="Pinning",
        message="3 of 8",
        generation=2,
        now=T1,
    )
    assert after == [
        cond("Planned", "True"),
        {
            "type": "Placed",
            "status": "False",
            "reason": "Pinning",
            "message": "3 of 8",
            "lastTransitionTime": T1_TEXT,
            "observedGeneration": 2,
        },
    ]
    assert before == [cond("Planned", "True")]  # input untouched
    for c in after:
        Condition.model_validate(c)


def test_same_status_keeps_transition_time_but_updates_the_rest() -> None:
    after = set_condition(
        [cond("Placed", "False", "Pinning"), cond("Planned", "True")],
        type="Placed",
        status="False",
        reason="WaitingForPods",
        message="m",
        generation=3,
        now=T1,
    )
    assert after == [
        {**cond("Placed", "False", "WaitingForPods", gen=3), "message": "m"},
        cond("Planned", "True"),
    ]


def test_status_change_moves_transition_time() -> None:
    after = set_condition(
        [cond("Placed", "False")],
        type="Placed",
        status="True",
        reason="Placed",
        message="",
        generation=1,
        now=T1,
    )
    assert after[0]["lastTransitionTime"] == T1_TEXT


def test_missing_transition_time_is_filled_and_generation_optional() -> None:
    old = {"type": "Planned", "status": "True", "reason": "R", "message": ""}
    after = set_condition(
        [old], type="Planned", status="True", reason="R", message="", generation=None, now=T0
    )
    assert after == [
        {
            "type": "Planned",
            "status": "True",
            "reason": "R",
            "message": "",
            "lastTransitionTime": T0,
        }
    ]


@pytest.mark.parametrize(
    ("now", "text"),
    [
        (T1, T1_TEXT),
        (datetime(2026, 12, 2, 12, 0, tzinfo=timezone(timedelta(hours=2))), "2026-12-02T10:00:00Z"),
        ("2026-12-02T10:00:00.5+01:00", "2026-12-02T10:00:00.5+01:00"),
    ],
)
def test_timestamp(now: datetime | str, text: str) -> None:
    assert timestamp(now) == text


@pytest.mark.parametrize("bad", ["yesterday", "2026-12-02 10:00:00", "2026-12-02T10:00:00"])
def test_timestamp_rejects_non_rfc3339(bad: str) -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        timestamp(bad)


@pytest.mark.parametrize(
    ("conditions", "summary"),
    [
        ([], "Pending"),
        ([cond("Planned", "Unknown")], "Pending"),
        ([cond("Planned", "True")], "Planned"),
        ([cond("Planned", "False", "InsufficientGPUs")], "Waiting"),
        ([cond("Planned", "False", "InvalidSpec")], "Invalid"),
        ([cond("Planned", "False", "UnsupportedWorkload")], "Invalid"),
        ([cond("Planned", "True"), cond("Placed", "True")], "Placed"),
        ([cond("Planned", "True"), cond("Placed", "True"), cond("Degraded", "True")], "Degraded"),
        ([cond("Planned", "True"), cond("Placed", "True"), cond("Degraded", "False")], "Placed"),
        ([{"type": "Planned"}], "Pending"),  # garbage read back: no crash
    ],
)
def test_summarize(conditions: list[dict[str, Any]], summary: str) -> None:
    assert summarize(conditions) == summary


def test_find_and_is_true() -> None:
    conditions = [cond("Planned", "True"), cond("Placed", "False")]
    assert find_condition(conditions, "Placed") == cond("Placed", "False")
    assert find_condition(conditions, "Degraded") is None
    assert is_true(conditions, "Planned")
    assert not is_true(conditions, "Placed")
    assert not is_true(conditions, "Degraded")


def test_transitions_list_changed_statuses_only() -> None:
    old = [cond("Planned", "True"), cond("Placed", "False")]
    new = [cond("Planned", "True", "Other"), cond("Placed", "True"), cond("Degraded", "False")]
    assert transitions(old, new) == [cond("Placed", "True"), cond("Degraded", "False")]
    assert transitions(new, new) == []
    assert transitions([], [cond("Planned", "Unknown")]) == []


types = st.sampled_from(["Planned", "Placed", "Degraded"])
statuses = st.sampled_from(["True", "False", "Unknown"])
reasons = st.sampled_from(["InsufficientGPUs", "InvalidSpec", "Placed", "NodeNotReady"])
steps = st.lists(st.tuples(types, statuses, reasons), max_size=12)


@given(steps)
def test_conditions_stay_valid_and_agree_with_the_model(seq: list[tuple[str, Any, str]]) -> None:
    conditions: list[dict[str, Any]] = []
    for minute, (type_, status, reason) in enumerate(seq):
        now = datetime(2026, 12, 2, 10, minute, tzinfo=UTC)
        previous = find_condition(conditions, type_)
        conditions = set_condition(
            conditions,
            type=type_,
            status=status,
            reason=reason,
            message="",
            generation=minute,
            now=now,
        )
        current = find_condition(conditions, type_)
        assert current is not None
        if previous is not None and previous["status"] == status:
            assert current["lastTransitionTime"] == previous["lastTransitionTime"]
        else:
            assert current["lastTransitionTime"] == timestamp(now)
    assert len({c["type"] for c in conditions}) == len(conditions)
    model = TrainingTopologyStatus.model_validate({"conditions": conditions})
    assert model.summary == summarize(conditions)
