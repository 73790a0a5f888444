"""Neighbour-impact plugin: prefer placements that slow the running jobs least.

Theory of operation
-------------------
Priced next to the running jobs (``placement.neighbours``), a candidate carries its own step
communication *with* neighbours — which the communication-time plugin scores — and the
GPU-seconds the running jobs would lose on the links it shares during one of its steps. The
search should minimise the sum: the job's own communication GPU-seconds plus what it costs
the others. This plugin scores the share of that sum the job pays itself,

    100 · own ÷ (own + added),   own = GPUs × predicted step communication,

so a candidate that slows nobody scores 100 and one that costs the others as much as itself
scores 50. Its weight keeps communication time the main score (the registry test checks it
stays below the communication plugin's margin over the rest): between two candidates of the
same own time it decides; a candidate that is faster for itself but costs the others more than
it gains loses on the combined score. Without neighbours every candidate scores 100. No filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.placement.plugins.base import MAX_SCORE, Evaluated, PlanContext, clamp_score
from fabricfit.placement.slots import PodSlot

EXPLAIN_ABOVE_SHARE = 0.01  # explain when the others lose over 1 % of the job's own GPU-seconds


@dataclass(frozen=True, slots=True)
class NeighbourImpact:
    name: str = "neighbour-impact"
    weight: float = 10.0

    def filter(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> str | None:
        return None

    def score(self, ctx: PlanContext, cand: Evaluated) -> float:
        added = cand.predicted.added_to_others_gpu_seconds
        if added <= 0:
            return MAX_SCORE
        own = ctx.request.world_size * cand.predicted.step_comm_seconds
        return clamp_score(MAX_SCORE * own / (own + added))

    def explain(self, ctx: PlanContext, cand: Evaluated) -> str | None:
        predicted = cand.predicted
        own = ctx.request.world_size * predicted.step_comm_seconds
        if predicted.added_to_others_gpu_seconds <= EXPLAIN_ABOVE_SHARE * own:
            return None
        added = predicted.slowdown_added_to_others_seconds or 0.0
        return (
            f"it slows the running jobs it shares links with by {added * 1e3:.3g} ms per step "
            f"in total ({predicted.added_to_others_gpu_seconds:.3g} GPU-seconds during each of "
            "its steps); no candidate as fast for this job left their links quieter"
        )
