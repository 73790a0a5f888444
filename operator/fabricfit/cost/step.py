"""Training-step communication time of a placed job, per parallelism dimension.

Theory of operation
-------------------
:func:`fabricfit.cost.volumes.step_calls` says which collectives one step issues on every group
of each dimension (sizes, counts). Here the groups are located: ``slots[r]`` is where global rank
r sits. All groups of one dimension run their collective at the same time (the eight DP rings
of a node all reduce gradients together), so each group is priced with the contention ``load``
of its busiest NIC (:func:`fabricfit.cost.collectives.nic_loads`) and the dimension costs as
much as its slowest group. Groups of equal shape and load share one cached estimate, which
keeps a 1,024-GPU job to a few milliseconds: the work is one O(world) pass per dimension.

Pipeline groups are stage chains; their p2p transfers are the consecutive pairs, classified into
a handful of pair shapes (same domain; other domain on the same rail and rail group; across the
spine), with NIC contention counted per direction (sender egress, receiver ingress).

``spine_bytes_per_step`` counts bytes leaving NVLink domains over links above the leaf: for
collectives whose group crosses the spine, each domain's egress (busbw factor × size for ring
collectives, m·S·(n−m)/n for all-to-all) times the share of domain boundaries that cross the
spine (all of them when rails do not line up, one per rail group otherwise).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.cost.bounds import step_lower_bound
from fabricfit.cost.collectives import (
    Collective,
    bus_factor,
    estimate_shape,
    nic_loads,
    pxn_on,
    sent_shape,
)
from fabricfit.cost.shape import CostError, GroupShape, summarize_with_nics
from fabricfit.cost.volumes import DIMENSIONS, Call, StepCommEstimate, step_calls
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import GpuSlot

__all__ = ["StepCommEstimate", "estimate_calls", "estimate_step", "step_lower_bound"]

RankGroups = Sequence[Sequence[int]]


def estimate_step(
    groups: Mapping[str, RankGroups],
    slots: Sequence[GpuSlot],
    parallelism: Parallelism,
    model: ModelShape | None,
    profile: FabricProfile,
) -> StepCommEstimate:
    """Predicted communication seconds per step for this placement (see module docstring)."""
    return estimate_calls(step_calls(parallelism, model), groups, slots, profile)


def estimate_calls(
    calls: Mapping[str, Sequence[Call]],
    groups: Mapping[str, RankGroups],
    slots: Sequence[GpuSlot],
    profile: FabricProfile,
) -> StepCommEstimate:
    """Seconds of ``calls`` (per dimension, what each group issues) on this placement: a
    training step's (:func:`estimate_step`) or a served token's (:mod:`fabricfit.cost.serving`)."""
    by_dimension: dict[str, float] = {}
    spine_bytes = 0.0
    for dim in DIMENSIONS:
        rank_groups, issued = groups.get(dim, ()), calls.get(dim, ())
        if not issued or not rank_groups:
            by_dimension[dim] = 0.0
            continue
        if dim == "pipeline":
            secs, crossing = pair_transfers(issued, rank_groups, slots, profile)
        else:
            secs, crossing = _collective_dimension(issued, rank_groups, slots, profile)
        by_dimension[dim] = secs
        spine_bytes += crossing
    return StepCommEstimate(by_dimension, sum(by_dimension.values()), spine_bytes)


def _locate(rank_groups: RankGroups, slots: Sequence[GpuSlot]) -> list[list[GpuSlot]]:
    try:
        return [[slots[r] for r in g] for g in rank_groups if len(g) > 1]
    except IndexError:
        raise CostError(f"a group names a rank outside 0..{len(slots) - 1}") from None


def _collective_dimension(
    calls: Sequence[Call], rank_groups: RankGroups, slots: Sequence[GpuSlot], profile: FabricProfile
) -> tuple[float, float]:
    members = _locate(rank_groups, slots)
    if not members:
        return 0.0, 0.0
    summaries = [summarize_with_nics(m) for m in members]
    shapes = [shape for shape, _ in summaries]
    loads = nic_loads([nics for _, nics in summaries])
    priced = set(zip(shapes, loads, strict=True))
    per_shape = Counter(shapes)
    seconds = crossing = 0.0
    for call in calls:
        worst = max(
            estimate_shape(call.collective, call.size_bytes, shape, profile, load=load).seconds
            for shape, load in priced
        )
        seconds += call.count * worst
        crossing += call.count * sum(
            n * spine_bytes(call, sent_shape(call.collective, s, profile))
            for s, n in per_shape.items()
        )
    return seconds, crossing


def spine_bytes(call: Call, shape: GroupShape) -> float:
    """Bytes one call of ``call`` on a group of ``shape`` sends over links above the leaf."""
    if not shape.crosses_spine:
        return 0.0
    n, m, d = shape.ranks, shape.max_per_domain, shape.domains
    if call.collective is Collective.ALL_TO_ALL:
        egress = m * call.size_bytes * (n - m) / n
    else:
        egress = bus_factor(call.collective, n) * call.size_bytes
    share = 1.0 if shape.ungrouped or not shape.rail_aligned else min(1.0, shape.rail_groups / d)
    return d * egress * share


# Pair shapes by (same domain, same node, same rail in one rail group, same spine).
_PAIRS: dict[tuple[bool, bool, bool, bool], GroupShape] = {
    (True, True, True, True): GroupShape(2, 1, 1, 2, 2, 1, 2, 1, False, 1, True),
    (True, False, True, True): GroupShape(2, 2, 1, 2, 2, 1, 1, 1, False, 1, True),
    (False, False, True, True): GroupShape(2, 2, 2, 1, 1, 1, 1, 1, False, 1, True),
    # off the leaf whatever PXN does: the pair key already said so (no window or rail match)
    (False, False, False, True): GroupShape(2, 2, 2, 1, 1, 1, 1, 2, False, 1, False, False, False),
    (False, False, False, False): GroupShape(2, 2, 2, 1, 1, 1, 1, 2, False, 2, False, False, False),
}


def _pair_key(a: GpuSlot, b: GpuSlot, pxn: bool) -> tuple[bool, bool, bool, bool]:
    if (a.nvlink_domain or "node:" + a.node) == (b.nvlink_domain or "node:" + b.node):
        return (True, a.node == b.node, True, True)
    leaf = _on_rail(a, b, pxn) and a.rail_group is not None and a.rail_group == b.rail_group
    return (False, False, leaf, leaf or a.spine == b.spine)


def _on_rail(a: GpuSlot, b: GpuSlot, pxn: bool) -> bool:
    """Whether a send from ``a`` reaches ``b`` on ``b``'s rail (``collectives.sent_shape``):
    with PXN through ``a``'s GPU of ``b``'s local index, else from ``a``'s own NIC."""
    return a.window_rail == b.window_rail if pxn else a.rail == b.rail


def _send_rail(a: GpuSlot, b: GpuSlot, pxn: bool) -> int:
    """The rail ``a``'s send to ``b`` leaves on (PXN relays it to the peer's)."""
    return b.rail if pxn and a.window_rail == b.window_rail else a.rail


def pair_transfers(
    calls: Sequence[Call], chains: RankGroups, slots: Sequence[GpuSlot], profile: FabricProfile
) -> tuple[float, float]:
    """Seconds and bytes above the leaf of ``calls`` (point-to-point) between consecutive
    members of every chain, all at once: pipeline stages, or a KV-cache transfer's pairs."""
    users: dict[tuple[str, str, int], int] = {}
    crossing_pairs = 0
    local: set[tuple[bool, bool, bool, bool]] = set()
    remote: list[
        tuple[tuple[bool, bool, bool, bool], tuple[str, str, int], tuple[str, str, int]]
    ] = []
    pxn = pxn_on(profile)
    for chain in _locate(chains, slots):
        for a, b in pairwise(chain):
            key = _pair_key(a, b, pxn)
            if key[0]:
                local.add(key)
                continue
            # contention per direction: the sender's NIC egress, the receiver's ingress
            out, into = ("out", a.node, _send_rail(a, b, pxn)), ("in", b.node, b.rail)
            users[out] = users.get(out, 0) + 1
            users[into] = users.get(into, 0) + 1
            crossing_pairs += not key[2]  # off the leaf: above it
            remote.append((key, out, into))
    if not local and not remote:
        return 0.0, 0.0
    keyed = {(key, 1) for key in local} | {(k, max(users[o], users[i])) for k, o, i in remote}
    priced = [(_PAIRS[key], load) for key, load in keyed]
    seconds = crossing = 0.0
    for call in calls:
        worst = max(
            estimate_shape(call.collective, call.size_bytes, shape, profile, load=load).seconds
            for shape, load in priced
        )
        seconds += call.count * worst
        crossing += call.count * call.size_bytes * crossing_pairs
    return seconds, crossing


#: How each dimension's groups talk across nodes: point-to-point (all-to-all, send/recv) or
#: NCCL's rings and trees.
P2P_DIMENSIONS = frozenset({"expert", "pipeline"})


def cross_rail_groups(
    groups: Mapping[str, RankGroups], slots: Sequence[GpuSlot], profile: FabricProfile
) -> dict[str, int]:
    """Per dimension, the groups some of whose traffic between nodes leaves on one rail and
    arrives on another (it climbs above the leaf: a spine, or on a rail-only fabric the
    front-end): rings and trees whose nodes drive different rail sets, point-to-point groups
    whose sends change rails as NCCL routes them (``collectives.sent_shape``, PXN or not)."""
    pxn = pxn_on(profile)
    found: dict[str, int] = {}
    for dim in DIMENSIONS:
        count = 0
        for members in _locate(groups.get(dim, ()), slots):
            if len({s.node for s in members}) <= 1:
                continue
            if dim == "pipeline":
                count += any(
                    a.node != b.node and not _on_rail(a, b, pxn) for a, b in pairwise(members)
                )
                continue
            shape = summarize_with_nics(members)[0]
            if dim in P2P_DIMENSIONS:
                shape = sent_shape(Collective.ALL_TO_ALL, shape, profile)
            count += not shape.rail_aligned
        found[dim] = count
    return found
