"""Status conditions as plain dicts in ``metav1.Condition`` shape (pure).

Theory of operation
-------------------
The operator reads ``status.conditions`` back as JSON and writes it as JSON; these helpers work
on those dicts directly, so a condition written by another operator version (or by hand) is
carried along instead of failing a reconcile. Semantics follow ``meta.SetStatusCondition`` and
:mod:`fabricfit.api.status` (which holds the same rules over the pydantic models):
``lastTransitionTime`` moves only when ``status`` changes, the order of types is kept, new
types are appended. The summary reuses :func:`fabricfit.api.status.summarize`, so the printer
column never disagrees with the model's derived ``summary``. The clock is an argument.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from fabricfit.api.status import (
    DATE_TIME_PATTERN,
    Condition,
    ConditionStatus,
    Summary,
    rfc3339,
)
from fabricfit.api.status import summarize as summarize_models

_DATE_TIME = re.compile(DATE_TIME_PATTERN)


def timestamp(now: datetime | str) -> str:
    """``now`` as an RFC 3339 ``metav1.Time`` string (datetimes: UTC, whole seconds)."""
    if isinstance(now, datetime):
        return rfc3339(now)
    if not _DATE_TIME.match(now):
        raise ValueError(f"not an RFC 3339 time: {now!r}")
    return now


def set_condition(
    conditions: Sequence[Mapping[str, Any]],
    *,
    type: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    generation: int | None,
    now: datetime | str,
) -> list[dict[str, Any]]:
    """``conditions`` with ``type`` set; ``lastTransitionTime`` kept when status is unchanged."""
    old = find_condition(conditions, type)
    moved = old is None or old.get("status") != status
    kept_time = None if old is None else old.get("lastTransitionTime")
    new: dict[str, Any] = {
        "type": type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": timestamp(now) if moved or not kept_time else kept_time,
    }
    if generation is not None:
        new["observedGeneration"] = generation
    if old is None:
        return [*(dict(c) for c in conditions), new]
    return [new if c.get("type") == type else dict(c) for c in conditions]


def find_condition(conditions: Sequence[Mapping[str, Any]], type_: str) -> Mapping[str, Any] | None:
    """The condition of ``type_``, or None when absent."""
    return next((c for c in conditions if c.get("type") == type_), None)


def is_true(conditions: Sequence[Mapping[str, Any]], type_: str) -> bool:
    """Whether the condition of ``type_`` is present with status True."""
    found = find_condition(conditions, type_)
    return found is not None and found.get("status") == "True"


def transitions(
    old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Conditions of ``new`` whose status differs from ``old`` (absent counts as Unknown):
    one event each."""
    changed = []
    for condition in new:
        before = find_condition(old, str(condition.get("type")))
        previous = "Unknown" if before is None else before.get("status")
        if condition.get("status") != previous:
            changed.append(dict(condition))
    return changed


def summarize(conditions: Sequence[Mapping[str, Any]]) -> Summary:
    """The printer-column summary (Pending, Planned, Placed, Degraded, Invalid or Waiting)."""
    models = tuple(
        Condition.model_construct(
            type=str(c.get("type", "")),
            status=c.get("status", "Unknown"),
            reason=str(c.get("reason", "")),
        )
        for c in conditions
    )
    return summarize_models(models)
