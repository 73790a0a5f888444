"""The collective cost model's public entry points.

Theory of operation
-------------------
``estimate_shape`` is the pure, cached core: for a collective of ``size_bytes`` over a group whose
placement is summarised by a :class:`GroupShape`, it lists every candidate (algorithm, protocol)
the hardware supports (:mod:`fabricfit.cost.algorithms`, :mod:`fabricfit.cost.torus`), keeps the
ones matching a forced ``algorithm`` if any, and returns the fastest, as NCCL's tuner does.
Sizes follow nccl-tests (``doc/PERFORMANCE.md``): ``size_bytes`` is the per-rank buffer for
all-reduce, broadcast, reduce and send-recv, and the whole per-rank buffer (count·n·elem) for
reduce-scatter, all-gather and all-to-all; ``algbw = size / time`` and
``busbw = algbw × f`` with f = 2(n−1)/n, (n−1)/n or 1. GB = 1e9 bytes.

``load`` is the contention factor: how many groups share the busiest scale-out link of this
group. ``estimate_concurrent`` derives it from the groups themselves (NICs used by several
groups at once, e.g. eight DP rings forced onto one rail) and returns the slowest group.
Links above the leaf are always priced at their oversubscribed share (the profile's ratio),
even for one group alone: the model assumes a busy shared fabric, which also keeps "crossing
the spine is never faster than staying under one leaf" true by construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache

from fabricfit.cost import algorithms as alg
from fabricfit.cost import nccl
from fabricfit.cost.algorithms import Candidate
from fabricfit.cost.shape import CostError, GroupShape, summarize_group, summarize_with_nics
from fabricfit.cost.torus import torus_candidates
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.profiles.ncclsetup import pxn_active
from fabricfit.fabric.topology import GpuSlot


class Collective(StrEnum):
    ALL_REDUCE = "all-reduce"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_GATHER = "all-gather"
    ALL_TO_ALL = "all-to-all"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    SEND_RECV = "send-recv"


@dataclass(frozen=True)
class CollectiveEstimate:
    collective: Collective
    algorithm: str
    protocol: str
    seconds: float
    algbw_gb_per_s: float
    busbw_gb_per_s: float
    bottleneck: str  # "nvlink" | "nic" | "leaf" | "spine" | "ici" | "dcn" | "latency"
    size_bytes: int
    ranks: int
    transfer_seconds: float = 0.0  # the bytes / bandwidth part of ``seconds`` (no latency)


ALGORITHMS = (
    "auto",
    "ring",
    "tree",
    "nvls",
    "nvls-tree",
    "hierarchical",
    "pat",
    "pairwise",
    "p2p",
    "torus",
)
# A forced name matches its family: "nvls" covers NVLS-tree across domains, "ring" the torus rings.
_FAMILY = {"nvls": ("nvls", "nvls-tree"), "ring": ("ring", "torus", "p2p")}


def bus_factor(collective: Collective, ranks: int) -> float:
    """nccl-tests busbw factor (doc/PERFORMANCE.md)."""
    if collective is Collective.ALL_REDUCE:
        return 2 * (ranks - 1) / ranks
    if collective in (Collective.REDUCE_SCATTER, Collective.ALL_GATHER, Collective.ALL_TO_ALL):
        return (ranks - 1) / ranks
    return 1.0


def _gpu_candidates(
    collective: Collective,
    size: int,
    shape: GroupShape,
    profile: FabricProfile,
    *,
    load: float,
    algorithm: str,
) -> list[Candidate]:
    """The candidates NCCL enables for this collective and scope (tuning.cc enable rules), of
    the algorithms and protocols the platform's NCCL set-up allows (``nccl.Tiers``)."""
    n, d = shape.ranks, shape.domains
    factor = bus_factor(collective, n)
    t = nccl.tiers(shape, profile, load, forced=algorithm != "auto")
    if collective is Collective.ALL_REDUCE:
        found = [
            *alg.ring(
                size,
                shape,
                profile,
                t,
                alg.RingSteps(2 * (n - 1), 2 * (d - 1), factor, allreduce=True),
            ),
            *alg.tree_allreduce(size, shape, profile, t, auto=algorithm == "auto"),
            *alg.nvls(size, shape, profile, t, factor),
            *alg.nvls_tree_allreduce(size, shape, profile, t),
        ]
        if algorithm == "hierarchical":  # not an NCCL algorithm: only when asked for
            found += alg.hierarchical_allreduce(size, shape, profile, t)
        return found
    if collective in (Collective.REDUCE_SCATTER, Collective.ALL_GATHER):
        return [
            *alg.ring(size, shape, profile, t, alg.RingSteps(n - 1, d - 1, factor)),
            *alg.pat(size, shape, t),
            *alg.nvls(size, shape, profile, t, factor),
        ]
    if collective is Collective.ALL_TO_ALL:
        return alg.pairwise_alltoall(size, shape, profile, t)
    if collective is Collective.SEND_RECV:
        return alg.send_recv(size, shape, profile, t)
    return alg.ring(size, shape, profile, t, alg.RingSteps(n - 1, d - 1, factor))


def _pick(
    candidates: list[Candidate], algorithm: str, collective: Collective, profile: FabricProfile
) -> Candidate:
    if algorithm != "auto":
        allowed = _FAMILY.get(algorithm, (algorithm,))
        candidates = [c for c in candidates if c.algorithm in allowed]
    if not candidates:
        raise CostError(
            f"algorithm {algorithm!r} does not apply to {collective} on {profile.name} "
            "for this group"
        )
    return min(candidates, key=lambda c: c.seconds)


@lru_cache(maxsize=1 << 16)
def _estimate(
    collective: Collective,
    size: int,
    shape: GroupShape,
    profile: FabricProfile,
    *,
    algorithm: str,
    load: float,
) -> CollectiveEstimate:
    n = shape.ranks
    _check_shape(shape)
    if n == 1 or size == 0:
        return CollectiveEstimate(collective, "none", "none", 0.0, 0.0, 0.0, "latency", size, n)
    found = candidates(collective, size, shape, profile, algorithm=algorithm, load=load)
    best = _pick(found, algorithm, collective, profile)
    algbw = size / best.seconds / 1e9
    return CollectiveEstimate(
        collective=collective,
        algorithm=best.algorithm,
        protocol=best.protocol,
        seconds=best.seconds,
        algbw_gb_per_s=algbw,
        busbw_gb_per_s=algbw * bus_factor(collective, n),
        bottleneck=_bottleneck(best),
        size_bytes=size,
        ranks=n,
        transfer_seconds=best.transfer_s,
    )


def candidates(
    collective: Collective,
    size: int,
    shape: GroupShape,
    profile: FabricProfile,
    *,
    algorithm: str = "auto",
    load: float = 1.0,
) -> list[Candidate]:
    """Every (algorithm, protocol) the model weighs for this call, each priced at wall time:
    with ``algorithm="auto"`` what NCCL's tuner leaves in the running (see ``algorithms``),
    forced, every candidate of the algorithms the hardware has (``_pick`` keeps the asked one)."""
    if profile.torus is not None:
        return torus_candidates(collective.value, size, shape, profile, load)
    return _gpu_candidates(collective, size, shape, profile, load=load, algorithm=algorithm)


def _check_shape(shape: GroupShape) -> None:
    # shapes may be built by hand (placement bounds); reject ones no placement could produce
    if (
        shape.ranks < 1
        or not 1 <= shape.domains <= shape.ranks
        or not 1 <= shape.min_per_domain <= shape.max_per_domain <= shape.ranks
        or shape.min_nics_per_domain < 1
        or shape.max_per_node < 1
    ):
        raise CostError(f"inconsistent group shape {shape}")


def _bottleneck(best: Candidate) -> str:
    # when the α term dominates, no link is the limit: more bandwidth would not help
    return "latency" if best.latency_s > best.transfer_s else best.bottleneck


def estimate_shape(
    collective: Collective,
    size_bytes: int,
    shape: GroupShape,
    profile: FabricProfile,
    *,
    algorithm: str = "auto",
    load: float = 1.0,
) -> CollectiveEstimate:
    """Fastest algorithm for the collective on a group of this shape (pure, cached)."""
    if size_bytes < 0:
        raise CostError(f"size must be >= 0 bytes, got {size_bytes}")
    if not load >= 1.0:
        raise CostError(f"load must be >= 1, got {load}")
    if algorithm not in ALGORITHMS:
        raise CostError(f"unknown algorithm {algorithm!r} (one of {', '.join(ALGORITHMS)})")
    kind = Collective(collective)
    return _estimate(
        kind,
        int(size_bytes),
        sent_shape(kind, shape, profile),
        profile,
        algorithm=algorithm,
        load=float(load),
    )


#: Collectives NCCL runs as point-to-point operations, whose network path PXN chooses.
P2P_COLLECTIVES = frozenset({Collective.ALL_TO_ALL, Collective.SEND_RECV})


def sent_shape(collective: Collective, shape: GroupShape, profile: FabricProfile) -> GroupShape:
    """``shape`` as the collective's traffic crosses the rails. Rings and trees leave each node
    on the NICs of its own ranks: the rail sets must match (``rail_aligned``). Point-to-point
    operations without a graph pick their NIC per peer (NVIDIA/nccl src/graph/search.cc
    ``ncclTopoGetNetDev`` @5067397c, 1400-1470): with PXN (``pxn_enabled``, NCCL >= 2.12) from
    the GPU of this node with the peer's local index, reached over NVLink (proxyRank), so it
    stays on the peer's rail when the pods' windows start on the same rail; without it from the
    rank's own NIC, on rail only when every rank is on one rail."""
    if collective not in P2P_COLLECTIVES or shape.domains <= 1:
        return shape
    aligned = shape.window_aligned if pxn_on(profile) else shape.one_rail
    return shape if aligned == shape.rail_aligned else replace(shape, rail_aligned=aligned)


def pxn_on(profile: FabricProfile) -> bool:
    return pxn_active(profile.pxn_enabled, profile.nccl_version)


def estimate_collective(
    collective: Collective,
    size_bytes: int,
    group: Sequence[GpuSlot],
    profile: FabricProfile,
    *,
    algorithm: str = "auto",
) -> CollectiveEstimate:
    """Estimate for one group running alone on the fabric."""
    return estimate_shape(
        collective, size_bytes, summarize_group(group), profile, algorithm=algorithm
    )


def nic_loads(nic_sets: Sequence[frozenset[tuple[str, int]]]) -> list[int]:
    """Per group: how many groups use its busiest NIC (1 when it uses none or shares none)."""
    users: dict[tuple[str, int], int] = {}
    for nics in nic_sets:
        for nic in nics:
            users[nic] = users.get(nic, 0) + 1
    return [max((users[nic] for nic in nics), default=1) for nics in nic_sets]


def estimate_concurrent(
    collective: Collective,
    size_bytes: int,
    groups: Sequence[Sequence[GpuSlot]],
    profile: FabricProfile,
    *,
    algorithm: str = "auto",
) -> CollectiveEstimate:
    """All groups run the collective at once; the slowest one's estimate is returned."""
    if not groups:
        raise CostError("estimate_concurrent needs at least one group")
    summaries = [summarize_with_nics(g) for g in groups]
    shapes = [shape for shape, _ in summaries]
    loads = nic_loads([nics for _, nics in summaries])
    estimates = {
        (shape, load): estimate_shape(
            collective, size_bytes, shape, profile, algorithm=algorithm, load=load
        )
        for shape, load in zip(shapes, loads, strict=True)
    }
    return max(estimates.values(), key=lambda e: e.seconds)
