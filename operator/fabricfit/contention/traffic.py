"""What a placed job puts on each shared link per training step, from the cost model.

Theory of operation
-------------------
The cost model (:mod:`fabricfit.cost.volumes`) says which collectives one step issues on every
group of each parallelism dimension; :mod:`fabricfit.cost.step` prices them. Here the same
calls are followed onto the links of :mod:`fabricfit.contention.links`, per dimension:

* a ring-type collective (all-reduce, reduce-scatter, all-gather, broadcast, reduce) sends
  ``bus factor × size`` bytes out of every NVLink domain of the group and into the next one,
  spread over the NICs the group drives there. Between domains the ring crosses the leaf
  uplinks as the cost model counts spine bytes (``cost.step.spine_bytes``): a rail-aligned
  group visits each rail group once, so it climbs once per rail group (from one to the next,
  on every rail it uses); a group whose nodes use different rails, or have no rail group,
  climbs at every domain boundary. Crossing spine blocks also loads both blocks' spine links.
  Trees move about the same bytes per domain; their pattern is not modelled apart;
* an all-to-all sends each rank's ``size / n`` to every other rank: a domain of ``m`` ranks
  sends ``m (n − m) / n × size`` out over its NICs; with PXN (NCCL's default) traffic between
  domains of one rail group stays on the rail leaves, and a rail group of ``M`` ranks sends
  ``M (n − M) / n × size`` up its uplinks and receives as much (a spine block the same);
* pipeline send/recv: per pair of consecutive stages in different domains, the activations
  one way and the gradients back, ``size × micro-batches`` each way, over the sender's and the
  receiver's NIC, and over their leaves' uplinks unless both sit on the same rail of one rail
  group.

Each dimension also gets its *network seconds*: the transfer part (no latency) of its calls
priced by the same cost model on the same placement with the fabric's oversubscription taken
away (:func:`non_blocking`), i.e. how long its flows push bytes when no uplink is in their way.
Bytes over network seconds is the rate a dimension demands of a link while it communicates;
bytes over the whole step time is its average load (``contention.load``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.contention.links import DOWN, LEAF, NIC, NO_RAIL, SPINE, UP, Link, leaf_place
from fabricfit.cost.collectives import Collective, bus_factor, estimate_shape, nic_loads
from fabricfit.cost.shape import CostError, summarize_with_nics
from fabricfit.cost.volumes import DIMENSIONS, Call, step_calls
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import GpuSlot

RankGroups = Sequence[Sequence[int]]
LinkBytes = dict[Link, float]


@dataclass(frozen=True, slots=True)
class DimensionTraffic:
    """One dimension's traffic per step: bytes on each shared link, and the seconds its network
    transfers take at line rate (the denominator of the rate it demands of a link)."""

    dimension: str
    net_seconds: float
    bytes_per_step: Mapping[Link, float]


@lru_cache(maxsize=64)
def non_blocking(profile: FabricProfile) -> FabricProfile:
    """``profile`` with no oversubscription: the fabric as one flow alone sees it."""
    return replace(profile, leaf_oversubscription=1.0, spine_oversubscription=1.0)


def dimension_traffic(
    groups: Mapping[str, RankGroups],
    slots: Sequence[GpuSlot],
    parallelism: Parallelism,
    model: ModelShape | None,
    profile: FabricProfile,
    *,
    nic_nodes: Collection[str] | None = None,
) -> tuple[DimensionTraffic, ...]:
    """The traffic of every dimension that uses the network (see the module docstring).

    ``nic_nodes``: the nodes whose NIC links to count (None: every node); a search that only
    needs NICs other jobs also use passes those nodes and skips the rest."""
    if profile.torus is not None:
        return ()  # ICI links belong to one slice; jobs do not share them
    calls = step_calls(parallelism, model)
    found: list[DimensionTraffic] = []
    for dim in DIMENSIONS:
        rank_groups = groups.get(dim, ())
        if not calls[dim] or not rank_groups:
            continue
        try:
            members = [[slots[r] for r in g] for g in rank_groups if len(g) > 1]
        except IndexError:
            raise CostError(f"a group names a rank outside 0..{len(slots) - 1}") from None
        if dim == "pipeline":
            traffic = _pipeline(calls[dim], members, profile, nic_nodes)
        else:
            traffic = _collective(calls[dim], members, profile, nic_nodes)
        if traffic is not None:
            found.append(DimensionTraffic(dim, traffic[0], traffic[1]))
    return tuple(found)


def _collective(
    calls: Sequence[Call],
    members: list[list[GpuSlot]],
    profile: FabricProfile,
    nic_nodes: Collection[str] | None,
) -> tuple[float, LinkBytes] | None:
    summaries = [summarize_with_nics(m) for m in members]
    located = [(s, m) for (s, _), m in zip(summaries, members, strict=True) if s.domains > 1]
    if not located:
        return None
    loads = nic_loads([nics for _, nics in summaries])
    priced = {(s, load) for (s, _), load in zip(summaries, loads, strict=True) if s.domains > 1}
    wide = non_blocking(profile)
    net = 0.0
    for call in calls:
        worst = max(
            estimate_shape(call.collective, call.size_bytes, s, wide, load=load).transfer_seconds
            for s, load in priced
        )
        net += call.count * worst
    found: LinkBytes = {}
    for shape, group in located:
        ring = sum(
            c.count * bus_factor(c.collective, shape.ranks) * c.size_bytes
            for c in calls
            if c.collective is not Collective.ALL_TO_ALL
        )
        pairwise_bytes = sum(
            c.count * c.size_bytes for c in calls if c.collective is Collective.ALL_TO_ALL
        )
        domains = _domains(group)
        if ring:
            _ring(found, domains, ring, shape.rail_aligned, nic_nodes)
        if pairwise_bytes:
            _all_to_all(found, domains, pairwise_bytes, shape.ranks, nic_nodes)
    return (net, found) if net > 0 else None


@dataclass(slots=True)
class _Domain:
    """One NVLink domain of a group: its ranks, the NICs they drive, its leaf and spine."""

    ranks: int
    nics: dict[tuple[str, int], None]  # ordered set of (node, rail)
    leaf: str
    spine: str

    @property
    def rails(self) -> list[int]:
        return sorted({rail for _, rail in self.nics})


def _domains(group: Sequence[GpuSlot]) -> list[_Domain]:
    """The group's domains in the order its ranks first reach them."""
    found: dict[str, _Domain] = {}
    for slot in group:
        key = slot.nvlink_domain or "node:" + slot.node
        domain = found.get(key)
        if domain is None:
            domain = found[key] = _Domain(0, {}, leaf_place(slot), slot.spine)
        domain.ranks += 1
        domain.nics[(slot.node, slot.rail)] = None
    return list(found.values())


def _add(found: LinkBytes, link: Link, amount: float) -> None:
    found[link] = found.get(link, 0.0) + amount


def _nic_bytes(
    found: LinkBytes, domain: _Domain, out: float, into: float, nodes: Collection[str] | None
) -> None:
    share = 1.0 / len(domain.nics)
    for node, rail in domain.nics:
        if nodes is None or node in nodes:
            _add(found, Link(NIC, node, rail, UP), out * share)
            _add(found, Link(NIC, node, rail, DOWN), into * share)


def _climb(found: LinkBytes, source: _Domain, target: _Domain, amount: float) -> None:
    """``amount`` bytes from ``source`` up its leaf uplinks and down into ``target``'s."""
    for rails, domain, direction in ((source.rails, source, UP), (target.rails, target, DOWN)):
        share = amount / len(rails)
        for rail in rails:
            _add(found, Link(LEAF, domain.leaf, rail, direction), share)
    if source.spine != target.spine:
        _add(found, Link(SPINE, source.spine, NO_RAIL, UP), amount)
        _add(found, Link(SPINE, target.spine, NO_RAIL, DOWN), amount)


def _ring(
    found: LinkBytes,
    domains: list[_Domain],
    egress: float,
    rail_aligned: bool,
    nic_nodes: Collection[str] | None,
) -> None:
    for domain in domains:
        _nic_bytes(found, domain, egress, egress, nic_nodes)
    grouped = all(not d.leaf.startswith("node:") for d in domains)
    if rail_aligned and grouped:
        # one visit per leaf: the first domain of each leaf stands for it
        order = list({d.leaf: d for d in reversed(domains)}.values())[::-1]
        if len(order) > 1:
            for source, target in zip(order, [*order[1:], order[0]], strict=True):
                _climb(found, source, target, egress)
        return
    for source, target in zip(domains, [*domains[1:], domains[0]], strict=True):
        _climb(found, source, target, egress)


def _all_to_all(
    found: LinkBytes,
    domains: list[_Domain],
    size: float,
    ranks: int,
    nic_nodes: Collection[str] | None,
) -> None:
    for domain in domains:
        out = domain.ranks * (ranks - domain.ranks) / ranks * size
        _nic_bytes(found, domain, out, out, nic_nodes)
    leaves: dict[str, list[_Domain]] = {}
    spines: dict[str, int] = {}
    for domain in domains:
        leaves.setdefault(domain.leaf, []).append(domain)
        spines[domain.spine] = spines.get(domain.spine, 0) + domain.ranks
    if len(leaves) > 1:
        for members in leaves.values():
            count = sum(d.ranks for d in members)
            crossing = count * (ranks - count) / ranks * size
            rails = sorted({r for d in members for _, r in d.nics})
            for rail in rails:
                for direction in (UP, DOWN):
                    link = Link(LEAF, members[0].leaf, rail, direction)
                    _add(found, link, crossing / len(rails))
    if len(spines) > 1:
        for spine, count in spines.items():
            crossing = count * (ranks - count) / ranks * size
            _add(found, Link(SPINE, spine, NO_RAIL, UP), crossing)
            _add(found, Link(SPINE, spine, NO_RAIL, DOWN), crossing)


def _pipeline(
    calls: Sequence[Call],
    chains: list[list[GpuSlot]],
    profile: FabricProfile,
    nic_nodes: Collection[str] | None,
) -> tuple[float, LinkBytes] | None:
    pairs = [
        (a, b)
        for chain in chains
        for a, b in pairwise(chain)
        if (a.nvlink_domain or "node:" + a.node) != (b.nvlink_domain or "node:" + b.node)
    ]
    if not pairs:
        return None
    users: dict[tuple[str, str, int], int] = {}
    for a, b in pairs:  # NIC contention per direction, as cost.step prices it
        for key in (("out", a.node, a.rail), ("in", b.node, b.rail)):
            users[key] = users.get(key, 0) + 1
    wide = non_blocking(profile)
    shapes = {
        (
            summarize_with_nics((a, b))[0],
            max(users["out", a.node, a.rail], users["in", b.node, b.rail]),
        )
        for a, b in pairs
    }
    net = 0.0
    found: LinkBytes = {}
    for call in calls:
        net += call.count * max(
            estimate_shape(call.collective, call.size_bytes, s, wide, load=load).transfer_seconds
            for s, load in shapes
        )
        each_way = call.size_bytes * call.count / 2  # forward activations, backward gradients
        for a, b in pairs:
            _pair(found, a, b, each_way, nic_nodes)
            _pair(found, b, a, each_way, nic_nodes)
    return (net, found) if net > 0 else None


def _pair(
    found: LinkBytes, a: GpuSlot, b: GpuSlot, amount: float, nic_nodes: Collection[str] | None
) -> None:
    if nic_nodes is None or a.node in nic_nodes:
        _add(found, Link(NIC, a.node, a.rail, UP), amount)
    if nic_nodes is None or b.node in nic_nodes:
        _add(found, Link(NIC, b.node, b.rail, DOWN), amount)
    if a.rail == b.rail and a.rail_group is not None and a.rail_group == b.rail_group:
        return  # one leaf hop on the rail
    _add(found, Link(LEAF, leaf_place(a), a.rail, UP), amount)
    _add(found, Link(LEAF, leaf_place(b), b.rail, DOWN), amount)
    if a.spine != b.spine:
        _add(found, Link(SPINE, a.spine, NO_RAIL, UP), amount)
        _add(found, Link(SPINE, b.spine, NO_RAIL, DOWN), amount)
