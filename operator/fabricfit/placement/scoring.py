"""Run the plugins over one candidate: filters, cost-model prediction, weighted score.

Theory of operation
-------------------
``Scorer`` holds the per-plan constants (context, plugins, cost bridge). ``evaluate`` first runs
every plugin's filter on the pod slots alone — cheap, and a rejected candidate is never priced —
then asks the cost model for the predicted step times, then combines plugin scores as
``Σ weightᵢ·scoreᵢ / Σ weightᵢ``. Results are frozen ``Scored`` values, ordered by
``sort_key`` (higher total first, then lower predicted time), so ties never depend on dict order.

When fabricfit does not choose the GPUs (``gpu_choice`` not enforced) a candidate is priced on
the windows the device plugin hands out (``placement.handout``), in the worse of the two
hand-out orders: the candidate it evaluates is what the pods will really get.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from fabricfit.placement.costing import StepModel
from fabricfit.placement.handout import Handout
from fabricfit.placement.plugins.base import Evaluated, PlanContext, Plugin
from fabricfit.placement.request import ENFORCED
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


def price_slots(model: StepModel, handout: Handout | None, slots: Sequence[PodSlot]) -> Evaluated:
    """``slots`` as the pods will get them, priced: as they are (``handout`` None: fabricfit
    enforces its windows), else in the worse hand-out order (``placement.handout``)."""
    worst: Evaluated | None = None
    for order in handout.orders(slots) if handout is not None else (tuple(slots),):
        ranks = model.rank_slots(order)
        found = Evaluated(slots=order, ranks=ranks, predicted=model.predict(ranks))
        if worst is None or _seconds(found) > _seconds(worst):
            worst = found
    assert worst is not None  # at least one order
    return worst


def _seconds(evaluated: Evaluated) -> float:
    return evaluated.predicted.step_comm_seconds


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
        enforced = ctx.request.gpu_choice == ENFORCED
        self.handout = None if enforced else Handout(ctx.domains)

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
        evaluated = self._priced(slots)
        scores = {p.name: p.score(self.ctx, evaluated) for p in self.plugins}
        total = sum(p.weight * scores[p.name] for p in self.plugins) / self._weight_sum
        return Scored(
            label=label, evaluated=evaluated, scores=MappingProxyType(scores), total=total
        )

    def _priced(self, slots: Sequence[PodSlot]) -> Evaluated:
        return price_slots(self.model, self.handout, slots)

    def explain(self, scored: Scored) -> tuple[str, ...]:
        """Reasons for every unmet preference of the chosen candidate."""
        reasons: list[str] = []
        for plugin in self.plugins:
            reason = plugin.explain(self.ctx, scored.evaluated)
            if reason is not None:
                reasons.append(reason)
        return tuple(reasons)
