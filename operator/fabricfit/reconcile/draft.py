"""A status being prepared during one reconcile: conditions, transitions, fields to write.

Reconcile steps set conditions and fields on the draft; the draft knows which conditions
changed (each such change becomes an Event) and whether anything differs from what the object
already shows, so an idempotent re-run writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.api.status import (
    Condition,
    TrainingTopologyStatus,
    find_condition,
    rfc3339,
    set_condition,
    summarize,
)


@dataclass(frozen=True)
class Transition:
    """A condition that changed status or reason: posted as an Event of the reason's severity."""

    reason: Reason
    message: str

    @property
    def type(self) -> str:
        return self.reason.condition.value

    @property
    def status(self) -> str:
        return self.reason.status


class StatusDraft:
    def __init__(self, current: Mapping[str, Any] | None, generation: int) -> None:
        self.current: dict[str, Any] = dict(current or {})
        parsed = TrainingTopologyStatus.model_validate(
            {"conditions": self.current.get("conditions") or []}
        )
        self.conditions: tuple[Condition, ...] = parsed.conditions
        self.generation = generation
        self.fields: dict[str, Any] = {}
        self.transitions: list[Transition] = []
        self.pins = 0

    def condition(self, reason: Reason, message: str) -> None:
        """Set the condition ``reason`` belongs to (its type and status come with it)."""
        type_, status = reason.condition.value, reason.status
        old = find_condition(self.conditions, type_)
        new = Condition.model_validate(
            {
                "type": type_,
                "status": status,
                "reason": reason.value,
                "message": message[:32768],
                "lastTransitionTime": rfc3339(datetime.now(UTC)),
                "observedGeneration": self.generation,
            }
        )
        if old is None or old.status != status or old.reason != reason:
            self.transitions.append(Transition(reason, message))
        self.conditions = set_condition(self.conditions, new)

    def drop(self, type_: str) -> None:
        """Remove the condition ``type_`` (one that no longer applies, e.g. targets removed)."""
        self.conditions = tuple(c for c in self.conditions if c.type != type_)

    def set(self, **fields: Any) -> None:
        """Status fields to write (camelCase keys)."""
        self.fields.update(fields)

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, self.current.get(key, default))

    def body(self) -> dict[str, Any] | None:
        """The merge-patch body, or None when the object already shows all of it."""
        conditions = [
            c.model_dump(by_alias=True, mode="json", exclude_none=True) for c in self.conditions
        ]
        body = {
            **self.fields,
            "conditions": conditions,
            "summary": summarize(self.conditions),
            "observedGeneration": self.generation,
        }
        if all(self.current.get(k) == v for k, v in body.items() if k != "conditions") and (
            _without_times(self.current.get("conditions")) == _without_times(conditions)
        ):
            return None
        return body

    def committed(self, status: Mapping[str, Any]) -> None:
        """After a successful write: what the object now shows."""
        self.current = dict(status)
        self.fields = {}


def _without_times(conditions: Any) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in conditions or []
        if isinstance(c, Mapping)
    ]
