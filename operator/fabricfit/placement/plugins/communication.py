"""Communication plugin: the main score, predicted step communication time vs its lower bound.

Theory of operation
-------------------
The cost model predicts the job's per-step communication seconds for a candidate; the lower
bound is what the same job would pay with every group on its fastest possible tier. The score is
``100 · lower bound ÷ predicted`` — the placement efficiency in percent — so it is comparable
across jobs and dominates the total through its weight. No filter: any placement can run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.placement.plugins.base import MAX_SCORE, Evaluated, PlanContext, clamp_score
from fabricfit.placement.slots import PodSlot

EXPLAIN_BELOW_EFFICIENCY = 0.9


@dataclass(frozen=True, slots=True)
class CommunicationTime:
    name: str = "communication-time"
    weight: float = 20.0

    def filter(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> str | None:
        return None

    def score(self, ctx: PlanContext, cand: Evaluated) -> float:
        predicted = cand.predicted.step_comm_seconds
        if predicted <= 0:
            return MAX_SCORE
        return clamp_score(MAX_SCORE * ctx.lower_bound.step_comm_seconds / predicted)

    def explain(self, ctx: PlanContext, cand: Evaluated) -> str | None:
        efficiency = self.score(ctx, cand) / MAX_SCORE
        if efficiency >= EXPLAIN_BELOW_EFFICIENCY:
            return None
        worst = max(
            cand.predicted.by_dimension.items(),
            key=lambda item: item[1] - ctx.lower_bound.by_dimension.get(item[0], 0.0),
            default=("none", 0.0),
        )
        return (
            f"predicted step communication is {efficiency:.0%} efficient against the lower bound; "
            f"most of the gap is {worst[0]} traffic leaving its fastest tier"
        )
