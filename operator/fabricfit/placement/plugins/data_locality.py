"""Data-locality plugin: data-parallel peers inside one rail group.

Theory of operation
-------------------
The dense-gradient all-reduce runs once per step over each data-parallel group; inside one rail
group it costs one leaf hop per rail, across rail groups it crosses the spine (often
oversubscribed). ``placement.data: Required`` makes this a filter; the score is the share of DP
groups whose pods sit in one rail group. Nodes without a rail-group label never count as one
(without rail groups every inter-node hop crosses the spine), so a single-node group
is the only way to satisfy the rule there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.placement.plugins.base import MAX_SCORE, Evaluated, PlanContext, pods_of_group
from fabricfit.placement.slots import PodSlot


def split_data_groups(ctx: PlanContext, slots: Sequence[PodSlot]) -> tuple[int, ...]:
    """Indices of DP groups not contained in one rail group (or one node); none for a served
    model, whose data-parallel ranks never all-reduce."""
    if ctx.request.serving is not None:
        return ()
    split: list[int] = []
    for index, group in enumerate(ctx.layout.groups["data"]):
        pods = pods_of_group(group, ctx.layout.gpus_per_pod)
        nodes = {slots[p].node for p in pods}
        if len(nodes) == 1:
            continue
        rail_groups = {slots[p].rail_group for p in pods}
        if len(rail_groups) > 1 or None in rail_groups:
            split.append(index)
    return tuple(split)


@dataclass(frozen=True, slots=True)
class DataLocality:
    name: str = "data-locality"
    weight: float = 2.0

    def filter(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> str | None:
        if not ctx.request.data_required:
            return None
        split = split_data_groups(ctx, slots)
        if not split:
            return None
        return f"{len(split)} data-parallel group(s) would span rail groups (Required)"

    def score(self, ctx: PlanContext, cand: Evaluated) -> float:
        groups = ctx.layout.groups["data"]
        return MAX_SCORE * (1 - len(split_data_groups(ctx, cand.slots)) / max(1, len(groups)))

    def explain(self, ctx: PlanContext, cand: Evaluated) -> str | None:
        split = split_data_groups(ctx, cand.slots)
        if not split:
            return None
        pods = pods_of_group(ctx.layout.groups["data"][split[0]], ctx.layout.gpus_per_pod)
        rail_groups = sorted({cand.slots[p].rail_group or "(none)" for p in pods})
        return (
            f"{len(split)} of {len(ctx.layout.groups['data'])} data-parallel groups span more than "
            f"one rail group (first spans {', '.join(rail_groups)}): no rail group had room for "
            "a whole group"
        )
