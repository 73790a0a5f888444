"""Fragmentation plugin: how much free capacity the placement leaves in awkward pieces.

Theory of operation
-------------------
A plan that takes half a node, or half a rail group, leaves a fragment that a later large job
cannot use well (Kueue's BestFit and Volcano's HyperNode bin-packing fight the same effect).
For the nodes and leaf domains a candidate touches we count those left partially free; the score
is ``100 · (1 − ½·partial nodes/touched nodes − ½·partial leaves/touched leaves)``. It is a
tie-breaker between candidates of similar communication time, hence its small weight.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.placement.plugins.base import MAX_SCORE, Evaluated, PlanContext, clamp_score
from fabricfit.placement.slots import PodSlot


def fragmentation_left(ctx: PlanContext, slots: Sequence[PodSlot]) -> tuple[float, float]:
    """Share of touched nodes and of touched leaf domains left partially free."""
    used_per_node = Counter(s.node for s in slots)
    used_per_leaf = Counter(s.leaf for s in slots)
    free_per_node: Counter[str] = Counter()
    free_per_leaf: Counter[str] = Counter()
    for domain in ctx.domains:
        if domain.key not in used_per_leaf:
            continue
        free_per_leaf[domain.key] = domain.capacity
        for slot in domain.slots:
            free_per_node[slot.node] += 1
    partial_nodes = sum(1 for n, used in used_per_node.items() if free_per_node[n] > used)
    partial_leaves = sum(1 for k, used in used_per_leaf.items() if free_per_leaf[k] > used)
    return partial_nodes / max(1, len(used_per_node)), partial_leaves / max(1, len(used_per_leaf))


@dataclass(frozen=True, slots=True)
class Fragmentation:
    name: str = "fragmentation"
    weight: float = 1.0

    def filter(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> str | None:
        return None

    def score(self, ctx: PlanContext, cand: Evaluated) -> float:
        nodes, leaves = fragmentation_left(ctx, cand.slots)
        return clamp_score(MAX_SCORE * (1 - 0.5 * nodes - 0.5 * leaves))

    def explain(self, ctx: PlanContext, cand: Evaluated) -> str | None:
        return None
