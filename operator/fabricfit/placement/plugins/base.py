"""The scoring-plugin contract, in the style of kube-scheduler framework plugins.

Theory of operation
-------------------
Every scoring concern is one small plugin module with a ``name``, a ``weight``, an optional
``filter`` (a hard constraint: returns a reason to reject a candidate, or None), a ``score`` in
``[0, 100]`` (higher is better) and an ``explain`` that turns an unmet *preference* into one
sentence for the decision's reasons. The search multiplies scores by weights and divides by the
weight sum, so the total is also in ``[0, 100]``. Plugins see frozen views only:
``PlanContext`` (request, rank layout, leaf domains, the lower bound) and ``Evaluated`` (one
candidate's pod slots, rank locations and predicted step times).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fabricfit.fabric.topology import GpuSlot
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.layout import Groups, RankLayout
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.serving import SpreadGoal
from fabricfit.placement.slots import LeafDomain, PodSlot

MAX_SCORE = 100.0


@dataclass(frozen=True, slots=True)
class PlanContext:
    """What every plugin may read about the job and the cluster."""

    request: PlacementRequest
    layout: RankLayout
    domains: tuple[LeafDomain, ...]
    lower_bound: StepTimes
    # A served model: the pods of each replica, and the spread every candidate must meet.
    replicas: tuple[tuple[int, ...], ...] = ()
    spread_goal: SpreadGoal | None = None


@dataclass(frozen=True, slots=True)
class Evaluated:
    """One candidate with its rank locations and predicted step communication times."""

    slots: tuple[PodSlot, ...]
    ranks: tuple[GpuSlot, ...]
    predicted: StepTimes


class Plugin(Protocol):
    """A scoring plugin (see module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> float: ...

    def filter(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> str | None: ...

    def score(self, ctx: PlanContext, cand: Evaluated) -> float: ...

    def explain(self, ctx: PlanContext, cand: Evaluated) -> str | None: ...


def pods_of_group(group: Sequence[int], gpus_per_pod: int) -> tuple[int, ...]:
    """The pods a group of ranks spans, in first-seen order."""
    return tuple(dict.fromkeys(rank // gpus_per_pod for rank in group))


def groups_split_by(
    groups: Groups, slots: Sequence[PodSlot], gpus_per_pod: int, attr: str
) -> tuple[int, ...]:
    """Indices of groups whose pods do not all share the slot attribute ``attr``."""
    split: list[int] = []
    for index, group in enumerate(groups):
        values = {getattr(slots[p], attr) for p in pods_of_group(group, gpus_per_pod)}
        if len(values) > 1 or None in values:
            split.append(index)
    return tuple(split)


def clamp_score(value: float) -> float:
    return max(0.0, min(MAX_SCORE, value))
