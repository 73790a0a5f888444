"""Pipeline-spread plugin: neighbouring pipeline stages close together in the fabric.

Theory of operation
-------------------
Stage *s* sends activations to stage *s+1* point to point, every micro-batch. Each pair of
neighbouring ranks in a pipeline chain earns a locality credit — same node 1.0, same leaf domain
0.75, same spine 0.4, otherwise 0 — and the score is 100 × the mean credit. Jobs without pipeline
parallelism score 100.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from fabricfit.placement.plugins.base import MAX_SCORE, Evaluated, PlanContext
from fabricfit.placement.slots import PodSlot

SAME_NODE = 1.0
SAME_LEAF = 0.75
SAME_SPINE = 0.4


def hop_credit(a: PodSlot, b: PodSlot) -> float:
    if a.node == b.node:
        return SAME_NODE
    if a.leaf == b.leaf:
        return SAME_LEAF
    if a.spine == b.spine:
        return SAME_SPINE
    return 0.0


def _credits(ctx: PlanContext, slots: Sequence[PodSlot]) -> list[float]:
    g = ctx.layout.gpus_per_pod
    return [
        hop_credit(slots[a // g], slots[b // g])
        for chain in ctx.layout.groups["pipeline"]
        for a, b in pairwise(chain)
    ]


def stage_spread(ctx: PlanContext, slots: Sequence[PodSlot]) -> float:
    """Mean locality credit over neighbouring pipeline ranks (1.0 without pipelining)."""
    credits = _credits(ctx, slots)
    return sum(credits) / len(credits) if credits else 1.0


@dataclass(frozen=True, slots=True)
class PipelineSpread:
    name: str = "pipeline-spread"
    weight: float = 1.0

    def filter(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> str | None:
        return None

    def score(self, ctx: PlanContext, cand: Evaluated) -> float:
        return MAX_SCORE * stage_spread(ctx, cand.slots)

    def explain(self, ctx: PlanContext, cand: Evaluated) -> str | None:
        # Count the pairs that cross spines; never compare the mean with SAME_SPINE: pairs all
        # under one spine average to 0.39999999999999997 in floating point, not 0.4.
        credits = _credits(ctx, cand.slots)
        apart = sum(1 for credit in credits if credit == 0.0)
        if not apart:
            return None
        return (
            f"{apart} of {len(credits)} neighbouring pipeline stage pairs were placed under "
            "different spines"
        )
