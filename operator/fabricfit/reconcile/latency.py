"""The ``LatencyTarget`` condition of a served model, from the plan its status records.

The verdict is the policy's (:func:`fabricfit.policy.latency.latency_verdict`, the one
``fabricfit plan`` prints); this sets it on the draft from ``status.predicted`` as it stands
after planning (a new plan's fields, or the recorded one's), and removes the condition when no
target applies any more (a training spec, targets removed, or a role that runs none of the
phases a target compares). ``Planned`` is left as it is: the plan stands either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricfit.api.conditions import ConditionType
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.policy.latency import latency_verdict
from fabricfit.reconcile.draft import StatusDraft


def set_latency_condition(draft: StatusDraft, spec: TrainingTopologySpec) -> None:
    predicted = draft.get("predicted")
    predicted = predicted if isinstance(predicted, Mapping) else {}
    serving = spec.serving
    verdict = None
    if serving is not None and draft.get("pods"):
        verdict = latency_verdict(
            serving.targets,
            _seconds(predicted, "decodeTokenCommSeconds"),
            _seconds(predicted, "prefillCommSeconds"),
            _seconds(predicted, "kvTransferSeconds"),
        )
    if verdict is None:
        draft.drop(ConditionType.LATENCY_TARGET)
        return
    draft.condition(verdict.reason, verdict.message)


def _seconds(predicted: Mapping[str, Any], key: str) -> float | None:
    value = predicted.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
