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
        gaps = {
            f"{dim} traffic": seconds - ctx.lower_bound.by_dimension.get(dim, 0.0)
            for dim, seconds in cand.predicted.by_dimension.items()
        }
        served, bound = cand.predicted.serving, ctx.lower_bound.serving
        if served is not None and served.kv_transfer_seconds is not None:
            floor = bound.kv_transfer_seconds if bound is not None else None
            gaps["the KV-cache transfer"] = served.kv_transfer_seconds - (floor or 0.0)
        worst = max(gaps.items(), key=lambda item: item[1], default=("none traffic", 0.0))
        what = "step communication" if served is None else "communication to a first token"
        return (
            f"predicted {what} is {efficiency:.0%} efficient against the lower bound; "
            f"most of the gap is {worst[0]} leaving its fastest tier"
        )
