"""Replica-spread plugin: a served model's replicas spread over racks, rail groups or spines.

Theory of operation
-------------------
``serving.spread`` asks for availability: a rack (rail group, spine) lost takes as few
replicas with it as the free capacity allows. The search first builds the spread candidate
(``placement.serving.spread_candidate``: replicas water-filled over the tier's domains), whose
most crowded domain holds ``limit`` replicas (:class:`~fabricfit.placement.serving.SpreadGoal`,
in the context). Every candidate must do as well — a filter: the communication objective never
sees replicas talk to each other, so nothing else would keep them apart. The score is
``100 · limit ÷ replicas in the most crowded domain``; a job without spread scores 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.placement.plugins.base import MAX_SCORE, Evaluated, PlanContext, clamp_score
from fabricfit.placement.serving import level_of, replica_loads
from fabricfit.placement.slots import PodSlot

TIER_WORDS = {"Rack": "rack", "RailGroup": "rail group", "Spine": "spine"}


@dataclass(frozen=True, slots=True)
class ReplicaSpread:
    name: str = "replica-spread"
    weight: float = 1.0

    def _most(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> tuple[int, str, int]:
        """Replicas in the most crowded domain, its key, and the domains used."""
        goal = ctx.spread_goal
        assert goal is not None
        load = replica_loads(ctx.replicas, slots, goal.spread)
        if not load:
            return 0, "", 0
        key = max(sorted(load), key=lambda k: load[k])
        return load[key], key, len(load)

    def filter(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> str | None:
        goal = ctx.spread_goal
        if goal is None:
            return None
        most, key, _ = self._most(ctx, slots)
        if most <= goal.limit:
            return None
        tier = TIER_WORDS[goal.spread]
        return (
            f"{most} replicas would share {tier} {key or '(unlabelled)'}: spread over "
            f"{tier}s allows at most {goal.limit} per {tier}"
        )

    def score(self, ctx: PlanContext, cand: Evaluated) -> float:
        goal = ctx.spread_goal
        if goal is None:
            return MAX_SCORE
        most, _, _ = self._most(ctx, cand.slots)
        return clamp_score(MAX_SCORE * goal.limit / max(1, most))

    def explain(self, ctx: PlanContext, cand: Evaluated) -> str | None:
        goal = ctx.spread_goal
        if goal is None or goal.limit <= 1:
            return None
        most, _, used = self._most(ctx, cand.slots)
        level = level_of(goal.spread)
        if used >= len({level(s) for d in ctx.domains for s in d.slots}):
            return None  # every domain of the tier with free room holds some: spread is whole
        tier = TIER_WORDS[goal.spread]
        return (
            f"{len(ctx.replicas)} replicas spread over {used} {tier}s, up to {most} per {tier}: "
            f"no more {tier}s had room for a whole replica"
        )
