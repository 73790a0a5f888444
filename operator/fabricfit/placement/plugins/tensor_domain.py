"""Tensor-domain plugin: tensor-parallel groups inside one NVLink domain.

Theory of operation
-------------------
Tensor parallelism all-reduces activations in every layer; off NVLink it is an order of
magnitude slower, so ``placement.tensor: Required`` makes this a filter. The score is the share
of TP groups whose pods all sit in one NVLink domain; with ``Preferred`` a shortfall is
explained instead of rejected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.placement.plugins.base import MAX_SCORE, Evaluated, PlanContext, groups_split_by
from fabricfit.placement.slots import PodSlot


@dataclass(frozen=True, slots=True)
class TensorDomain:
    name: str = "tensor-domain"
    weight: float = 2.0

    def _split(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> tuple[int, ...]:
        return groups_split_by(
            ctx.layout.groups["tensor"], slots, ctx.layout.gpus_per_pod, "nvlink_domain"
        )

    def filter(self, ctx: PlanContext, slots: Sequence[PodSlot]) -> str | None:
        if not ctx.request.tensor_required:
            return None
        split = self._split(ctx, slots)
        if not split:
            return None
        return f"{len(split)} tensor-parallel group(s) would span NVLink domains (Required)"

    def score(self, ctx: PlanContext, cand: Evaluated) -> float:
        groups = ctx.layout.groups["tensor"]
        return MAX_SCORE * (1 - len(self._split(ctx, cand.slots)) / max(1, len(groups)))

    def explain(self, ctx: PlanContext, cand: Evaluated) -> str | None:
        split = self._split(ctx, cand.slots)
        if not split:
            return None
        first = ctx.layout.groups["tensor"][split[0]]
        return (
            f"{len(split)} of {len(ctx.layout.groups['tensor'])} tensor-parallel groups span "
            f"NVLink domains (first: ranks {first[0]}–{first[-1]}): no single domain had room"
        )
