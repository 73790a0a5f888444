"""The best step communication time any placement could reach on a fabric (a lower bound).

Theory of operation
-------------------
Each dimension is priced as if its groups sat on the fastest tier they fit, independently of the
other dimensions (so the bound is valid, if loose, for every joint placement):

* a group of g ≤ (GPUs per NVLink domain) ranks sits in one domain, on as few nodes as it needs;
* a larger group is packed into ceil(g / D) full domains, rail-aligned inside one rail group, each
  domain driving every NIC its ranks own (the most scale-out bandwidth a ring can get), no
  contention (load 1) and no spine crossing;
* pipeline p2p stays on NVLink when the whole job fits one domain, else takes one leaf hop on
  the same rail.

The same step volumes as :func:`fabricfit.cost.step.estimate_step` are used, so
``predicted / bound ≥ 1`` is the placement's efficiency gap. The spine bytes of the bound are 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.cost.collectives import estimate_shape
from fabricfit.cost.shape import GroupShape
from fabricfit.cost.volumes import DIMENSIONS, Call, StepCommEstimate, step_calls
from fabricfit.fabric.profiles import FabricProfile


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def best_shape(ranks: int, profile: FabricProfile, gpus_per_pod: int) -> GroupShape:
    """Fastest placement shape for a group of ``ranks`` (see module docstring)."""
    per_node = max(
        1, min(profile.gpus_per_node, gpus_per_pod if gpus_per_pod > 0 else profile.gpus_per_node)
    )
    domain = max(profile.gpus_per_nvlink_domain, 1)
    domains = _ceil_div(ranks, domain)
    m = _ceil_div(ranks, domains)
    nodes_per_domain = _ceil_div(m, per_node)
    least = ranks - (domains - 1) * m
    nics = max(1, _ceil_div(least * profile.nics_per_node, profile.gpus_per_node))
    return GroupShape(
        ranks=ranks,
        nodes=domains * nodes_per_domain,
        domains=domains,
        max_per_domain=m,
        min_per_domain=least,
        min_nics_per_domain=nics,
        max_per_node=min(m, per_node),
        rail_groups=1,
        ungrouped=False,
        spines=1,
        rail_aligned=True,
    )


def _pair_shape(world: int, profile: FabricProfile) -> GroupShape:
    if world <= profile.gpus_per_nvlink_domain:
        return GroupShape(2, 1, 1, 2, 2, 1, 2, 1, False, 1, True)
    return GroupShape(2, 2, 2, 1, 1, 1, 1, 1, False, 1, True)


def _price(calls: Sequence[Call], shape: GroupShape, profile: FabricProfile) -> float:
    return sum(
        call.count * estimate_shape(call.collective, call.size_bytes, shape, profile).seconds
        for call in calls
    )


def step_lower_bound(
    parallelism: Parallelism,
    model: ModelShape | None,
    profile: FabricProfile,
    gpus_per_pod: int,
    groups: Mapping[str, Sequence[Sequence[int]]],
) -> StepCommEstimate:
    """Best step communication any placement of this job could reach on ``profile``."""
    calls = step_calls(parallelism, model)
    by_dimension: dict[str, float] = {}
    for dim in DIMENSIONS:
        sizes = [len(g) for g in groups.get(dim, ()) if len(g) > 1]
        if not calls[dim] or not sizes:
            by_dimension[dim] = 0.0
        elif dim == "pipeline":
            by_dimension[dim] = _price(
                calls[dim], _pair_shape(parallelism.world_size, profile), profile
            )
        else:
            by_dimension[dim] = _price(
                calls[dim], best_shape(max(sizes), profile, gpus_per_pod), profile
            )
    return StepCommEstimate(by_dimension, sum(by_dimension.values()), 0.0)
