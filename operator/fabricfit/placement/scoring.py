"""Run the plugins over one candidate: filters, cost-model prediction, weighted score.

Theory of operation
-------------------
``Scorer`` holds the per-plan constants (context, plugins, cost bridge). ``evaluate`` first runs
every plugin's filter on the pod slots alone — cheap, and a rejected candidate is never priced —
then asks the cost model for the predicted step times, then combines plugin scores as
``Σ weightᵢ·scoreᵢ / Σ weightᵢ``. Results are frozen ``Scored`` values, ordered by
``sort_key`` (higher total first, then lower predicted time), so ties never depend on dict order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from fabricfit.placement.costing import StepModel
from fabricfit.placement.plugins.base import Evaluated, PlanContext, Plugin
from fabricfit.placement.slots import PodSlot

SCORE_DIGITS = 9


@dataclass(frozen=True, slots=True)
class Scored:
    """A candidate that passed every filter, with its plugin scores."""

    label: str
    evaluated: Evaluated
    scores: Mapping[str, float]
    total: float

    @property
    def predicted_seconds(self) -> float:
        return self.evaluated.predicted.step_comm_seconds

    def sort_key(self) -> tuple[float, float]:
        return (-round(self.total, SCORE_DIGITS), round(self.predicted_seconds, 15))


@dataclass(frozen=True, slots=True)
class Rejected:
    label: str
    reason: str


class Scorer:
    """Filters and scores candidates of one plan."""

    def __init__(self, ctx: PlanContext, plugins: Sequence[Plugin], model: StepModel) -> None:
        self.ctx = ctx
        self.plugins = tuple(plugins)
        self.model = model
        self._weight_sum = sum(p.weight for p in self.plugins) or 1.0

    def rejection(self, slots: Sequence[PodSlot]) -> str | None:
        for plugin in self.plugins:
            reason = plugin.filter(self.ctx, slots)
            if reason is not None:
                return reason
        return None

    def evaluate(self, label: str, slots: Sequence[PodSlot]) -> Scored | Rejected:
        reason = self.rejection(slots)
        if reason is not None:
            return Rejected(label=label, reason=reason)
        ranks = self.model.rank_slots(slots)
        evaluated = Evaluated(slots=tuple(slots), ranks=ranks, predicted=self.model.predict(ranks))
        scores = {p.name: p.score(self.ctx, evaluated) for p in self.plugins}
        total = sum(p.weight * scores[p.name] for p in self.plugins) / self._weight_sum
        return Scored(
            label=label, evaluated=evaluated, scores=MappingProxyType(scores), total=total
        )

    def explain(self, scored: Scored) -> tuple[str, ...]:
        """Reasons for every unmet preference of the chosen candidate."""
        reasons: list[str] = []
        for plugin in self.plugins:
            reason = plugin.explain(self.ctx, scored.evaluated)
            if reason is not None:
                reasons.append(reason)
        return tuple(reasons)
