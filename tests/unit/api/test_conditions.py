"""Reasons name a whole condition change: type, status, Event severity and Invalid vs Waiting."""

from __future__ import annotations

import re

import pytest

from fabricfit.api.conditions import INVALID_REASONS, ConditionType, Reason, Severity
from fabricfit.api.status import Condition, summarize
from fabricfit.api.statusbase import REASON_PATTERN
from fabricfit.reconcile.draft import StatusDraft


@pytest.mark.parametrize("reason", list(Reason), ids=str)
def test_every_reason_is_a_legal_condition_reason(reason: Reason) -> None:
    assert re.match(REASON_PATTERN, reason.value)
    assert reason.condition in ConditionType
    assert reason.status in ("True", "False", "Unknown")  # metav1.Condition's statuses


def test_reason_values_are_unique() -> None:
    assert len({r.value for r in Reason}) == len(list(Reason))


@pytest.mark.parametrize("reason", list(Reason), ids=str)
def test_draft_sets_the_condition_the_reason_belongs_to(reason: Reason) -> None:
    draft = StatusDraft(None, generation=1)
    draft.condition(reason, "why")
    (condition,) = draft.conditions
    assert (condition.type, condition.status, condition.reason) == (
        reason.condition.value,
        reason.status,
        reason.value,
    )
    (transition,) = draft.transitions
    assert (transition.type, transition.status) == (reason.condition.value, reason.status)


@pytest.mark.parametrize("reason", list(Reason), ids=str)
def test_summary_is_invalid_exactly_for_fix_the_spec_reasons(reason: Reason) -> None:
    if reason.condition is not ConditionType.PLANNED or reason.status != "False":
        return
    condition = Condition.model_validate(
        {
            "type": "Planned",
            "status": "False",
            "reason": reason.value,
            "message": "",
            "lastTransitionTime": "2026-12-02T10:00:00Z",
        }
    )
    assert summarize((condition,)) == ("Invalid" if reason in INVALID_REASONS else "Waiting")


def test_failures_a_human_must_see_are_warnings() -> None:
    # Every Planned=False and Degraded=True change is a Warning, and so are the Placed
    # failures that will not resolve on their own.
    for reason in Reason:
        must_warn = (reason.condition, reason.status) in {
            (ConditionType.PLANNED, "False"),
            (ConditionType.DEGRADED, "True"),
        }
        if must_warn:
            assert reason.severity is Severity.WARNING, reason
        if reason.status == "True" and reason.condition is not ConditionType.DEGRADED:
            assert reason.severity is Severity.NORMAL, reason
        if reason.status == "Unknown":  # not decided yet (admission-check: Kueue's turn)
            assert reason.severity is Severity.NORMAL, reason
    assert Reason.PODS_OFF_PLAN.severity is Severity.WARNING
    assert Reason.WAITING_FOR_PODS.severity is Severity.NORMAL


@pytest.mark.parametrize("reason", [Reason.AWAITING_ADMISSION, Reason.ADMISSION_RELEASED], ids=str)
def test_waiting_for_kueue_summarises_pending(reason: Reason) -> None:
    condition = Condition.model_validate(
        {
            "type": reason.condition.value,
            "status": reason.status,
            "reason": reason.value,
            "message": "",
            "lastTransitionTime": "2026-12-03T10:00:00Z",
        }
    )
    assert summarize((condition,)) == "Pending"
