"""What ``fabricfit plan`` adds for a served model: its replicas, partner and latency verdict.

The ``serving`` object of ``--json`` (present only for a spec with ``spec.serving``, so a
training plan's output is unchanged): ``role``, ``paired_with``, ``spread``, ``replicas`` (the
pod indices of each replica, in rank order) and ``latency_target`` (the ``LatencyTarget``
verdict the operator would set: ``met``, ``reason``, ``message``; null without targets).
The per-phase seconds are in ``predicted`` (``decode_token_comm_seconds``,
``prefill_comm_seconds``, ``kv_transfer_seconds``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.placement.decision import PlacementDecision
from fabricfit.placement.layout import build_layout
from fabricfit.placement.pairing import replica_pods
from fabricfit.policy.latency import LatencyVerdict, latency_verdict

if TYPE_CHECKING:
    from fabricfit.cli.pairing import Paired


def verdict_of(spec: TrainingTopologySpec, decision: PlacementDecision) -> LatencyVerdict | None:
    """The ``LatencyTarget`` verdict on a feasible plan (None: no target applies)."""
    times = decision.predicted.serving if decision.predicted is not None else None
    if spec.serving is None or times is None or not decision.feasible:
        return None
    return latency_verdict(
        spec.serving.targets,
        times.decode_token_comm_seconds,
        times.prefill_comm_seconds,
        times.kv_transfer_seconds,
    )


def serving_json(spec: TrainingTopologySpec, decision: PlacementDecision) -> dict[str, Any]:
    serving = spec.serving
    assert serving is not None
    layout = build_layout(spec.parallelism, spec.gpus_per_pod, spec.rank_order)
    verdict = verdict_of(spec, decision)
    return {
        "role": serving.role,
        "paired_with": serving.paired_with,
        "spread": serving.spread,
        "replicas": [list(pods) for pods in replica_pods(layout)],
        "latency_target": None
        if verdict is None
        else {"met": verdict.met, "reason": verdict.reason.value, "message": verdict.message},
    }


def serving_lines(
    spec: TrainingTopologySpec, decision: PlacementDecision, paired: Paired | None
) -> list[str]:
    """The text lines after the summary: the partner and the latency verdict."""
    lines: list[str] = []
    if paired is not None:
        how = "planned here first" if paired.planned_here else "its recorded plan"
        lines.append(f"paired with {paired.partner.name} ({how})")
    verdict = verdict_of(spec, decision)
    if verdict is not None:
        lines.append(f"latency target ({verdict.reason.value}): {verdict.message}")
    return lines
