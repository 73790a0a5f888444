"""The lower bound on a job's step communication: no placement on this fabric can beat it.

Theory of operation
-------------------
Each dimension is bounded on its own (the step time is their sum, so the sum of the bounds is a
bound). A dimension costs as much as its slowest group, so one group's best case bounds it. That
best case is the fastest :class:`GroupShape` the group *could* have, priced by the cost model
itself, call by call — a minimum over shapes, so the bound holds whatever algorithm the model
picks for whichever shape:

* ranks that share a pod share a node, so at most ``p`` = (members per pod) × (pods per node)
  members sit on one node and at most ``c`` = ``p`` × (nodes per NVLink domain) in one domain —
  the structural fact that makes the bound tight (TP filling a node leaves a 4-rank DP group
  no way into one domain; without it, the best placement would look 70 % efficient);
* every (most, fewest) members per domain ``1 ≤ l ≤ m ≤ c`` that ``n`` members allow is tried,
  each at the fewest and at the most domains that split allows (every term of the model is
  monotone in the number of domains for a fixed split, in either direction);
* the emptiest domain drives every NIC count its members could: from one per node they need
  to one per member (at most the NICs of its nodes) — NCCL runs a channel per NIC, and more
  channels also lengthen the tree's pipeline fill, so more NICs are not always faster; the
  group is rail-aligned in one rail group under one spine, at load 1;
* nodes: the fewest the pods allow, and — for algorithms that need one rank per node (PAT) —
  the most;
* pipeline: the chain's worst pair is at best on one node when the whole chain fits one node,
  else inside one domain when it fits one domain, else one leaf hop on the same rail.

TPU tori (:mod:`fabricfit.cost.torus`) price a group by its fullest slice ``m``, its slices and
how its chips sit on hosts: all on one host, or spread with some host full, is a compact
sub-slice; spread over hosts each holding fewer chips than a host has is one mesh axis (a line,
slower). For every ``m`` the fewest slices are tried (the DCN term only grows with slices), in
each host layout the group's pods allow — pods smaller than a host may share one, so a group of
two 2-chip pods can be a compact 2x2 on one 4-chip host.

The spine bytes of the bound are 0. The property test ``test_bound_property`` checks, over
every preset and custom profiles, random clusters, jobs, rank orders, pods that fill a host or
take part of one, and arbitrary placements, that nothing predicts less. A plan whose prediction
still falls below its bound says so (``placement.decision.bound_warnings``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.cost.collectives import estimate_shape
from fabricfit.cost.shape import GroupShape
from fabricfit.cost.volumes import DIMENSIONS, Call, StepCommEstimate, step_calls
from fabricfit.fabric.profiles import FabricProfile, TorusSpec
from fabricfit.fabric.topology import NodeInfo

__all__ = ["Hardware", "hardware_of", "step_lower_bound"]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True, slots=True)
class Hardware:
    """The largest node, NVLink domain and NIC count a placement could use (optimistic)."""

    node_gpus: int
    domain_gpus: int
    domain_nodes: int
    nics_per_node: int

    @property
    def nodes_per_domain(self) -> int:
        return max(1, self.domain_nodes, self.domain_gpus // max(1, self.node_gpus))


def hardware_of(nodes: Iterable[NodeInfo], profile: FabricProfile) -> Hardware:
    """The profile's sizes, raised to what the cluster's labels show (e.g. NVL72 racks priced
    with an HGX profile), so that no real placement is larger than the bound assumes."""
    node_gpus, nics = profile.gpus_per_node, profile.nics_per_node
    gpus: Counter[str] = Counter()
    members: Counter[str] = Counter()
    for node in nodes:
        if node.available and node.gpus > 0:
            node_gpus, nics = max(node_gpus, node.gpus), max(nics, node.rails)
            domain = node.place.nvlink_domain or node.name
            gpus[domain] += node.gpus
            members[domain] += 1
    domain_gpus = max([profile.gpus_per_nvlink_domain, node_gpus, *gpus.values()])
    per_domain = profile.nodes_per_nvlink_domain
    return Hardware(node_gpus, domain_gpus, max([per_domain, *members.values()]), nics)


def profile_hardware(profile: FabricProfile) -> Hardware:
    return hardware_of((), profile)


@dataclass(frozen=True, slots=True)
class _Group:
    """What limits where one group's ranks can go."""

    ranks: int
    per_node: int  # most members on one node
    pods: int  # pods the group spans (most nodes it can use)
    per_pod: int  # most members in one pod (fewest a node holding one of its pods holds)


def _group_of(members: Sequence[int], gpus_per_pod: int, hardware: Hardware) -> _Group:
    per_pod = Counter(r // gpus_per_pod for r in members)
    pods_per_node = max(1, hardware.node_gpus // gpus_per_pod)
    fullest_pod = max(per_pod.values())
    per_node = max(1, min(hardware.node_gpus, fullest_pod * pods_per_node))
    return _Group(len(members), min(per_node, len(members)), len(per_pod), fullest_pod)


def _shapes(group: _Group, hardware: Hardware) -> Iterator[GroupShape]:
    """The shape family of the module docstring: for each possible fullest domain ``m``, the
    fewest and the most domains it allows, with the fullest emptiest domain that leaves."""
    n = group.ranks
    cap = max(1, min(hardware.domain_gpus, n, group.per_node * hardware.nodes_per_domain))
    for most in range(1, cap + 1):
        if most == n:
            yield from _with_nodes(group, hardware, 1, n, n)
            continue
        for domains in {max(2, _ceil_div(n, most)), n - most + 1}:
            least = min(most, (n - most) // (domains - 1))
            yield from _with_nodes(group, hardware, domains, most, least)


def _with_nodes(
    group: _Group, hardware: Hardware, domains: int, most: int, least: int
) -> Iterator[GroupShape]:
    n = group.ranks
    fewest = max(domains, _ceil_div(n, group.per_node))
    most_nodes = min(group.pods, domains * hardware.nodes_per_domain, n)
    for nodes in {fewest, max(fewest, most_nodes)}:
        for nics in _nic_counts(group, hardware, least) if domains > 1 else (least,):
            yield GroupShape(
                ranks=n,
                nodes=nodes,
                domains=domains,
                max_per_domain=most,
                min_per_domain=least,
                min_nics_per_domain=nics,
                max_per_node=max(1, min(most, _ceil_div(n, nodes), group.per_node)),
                rail_groups=1,
                ungrouped=False,
                spines=1,
                rail_aligned=True,
            )


def _nic_counts(group: _Group, hardware: Hardware, least: int) -> range:
    """NICs the emptiest domain's ``least`` members can drive: at least one per node they need,
    at most one each. Every count is tried: NCCL runs a channel per NIC, and more channels
    also mean a longer tree pipeline fill (``chunks.tree_loop_bytes``), so more NICs are not
    always faster."""
    fewest = _ceil_div(least, group.per_node)
    most = max(fewest, min(least, hardware.nics_per_node * hardware.nodes_per_domain))
    return range(fewest, most + 1)


# Pipeline pairs: same node, same domain on two nodes, one leaf hop on the same rail.
_PAIR_SAME_NODE = GroupShape(2, 1, 1, 2, 2, 1, 2, 1, False, 1, True)
_PAIR_SAME_DOMAIN = GroupShape(2, 2, 1, 2, 2, 1, 1, 1, False, 1, True)
_PAIR_LEAF = GroupShape(2, 2, 2, 1, 1, 1, 1, 1, False, 1, True)


def _pair_shapes(chain: _Group, hardware: Hardware) -> tuple[GroupShape, ...]:
    """Shapes the chain's slowest pair can have at best (see the module docstring)."""
    if chain.per_node >= chain.ranks:
        return (_PAIR_SAME_NODE, _PAIR_SAME_DOMAIN, _PAIR_LEAF)
    if min(hardware.domain_gpus, chain.per_node * hardware.nodes_per_domain) >= chain.ranks:
        return (_PAIR_SAME_DOMAIN, _PAIR_LEAF)
    return (_PAIR_LEAF,)


def _best_seconds(
    calls: Sequence[Call], shapes: Iterable[GroupShape], profile: FabricProfile
) -> float:
    """Σ over calls of the fastest shape for that call (≤ the fastest shape for all calls)."""
    options = list(dict.fromkeys(shapes))
    return sum(
        call.count
        * min(estimate_shape(call.collective, call.size_bytes, s, profile).seconds for s in options)
        for call in calls
    )


def _torus_shapes(group: _Group, hardware: Hardware, torus: TorusSpec) -> Iterator[GroupShape]:
    """The torus family of the module docstring: for each possible fullest slice ``m``, the
    fewest slices it allows, in each layout of the hosts the group's pods allow."""
    n = group.ranks
    cap = max(1, min(hardware.domain_gpus, n, group.per_node * hardware.nodes_per_domain))
    for most in range(1, cap + 1):
        domains = 1 if most == n else max(2, _ceil_div(n, most))
        least = n - (domains - 1) * most
        for nodes, per_node in _torus_hosts(group, torus, domains, most):
            yield GroupShape(
                n, nodes, domains, most, least, 1, per_node, 1, False, 1, rail_aligned=True
            )


def _torus_hosts(group: _Group, torus: TorusSpec, domains: int, most: int) -> list[tuple[int, int]]:
    """(hosts, most chips on one host) for the ICI layouts ``torus.group_axes`` tells apart:
    all on one host; hosts of which one is full (a compact sub-slice); hosts each holding fewer
    chips than a host has (one mesh axis) — each only when the group's pods allow it."""
    n, chips = group.ranks, torus.chips_per_host
    layouts = []
    if domains == 1 and group.per_node >= n:
        layouts.append((1, n))
    if group.pods > 1 and group.per_node >= min(chips, n):
        layouts.append((max(2, domains), min(most, group.per_node)))
    if group.pods > 1 and group.per_pod < chips:
        layouts.append((max(2, domains, _ceil_div(n, group.per_pod)), group.per_pod))
    return layouts


def step_lower_bound(
    parallelism: Parallelism,
    model: ModelShape | None,
    profile: FabricProfile,
    gpus_per_pod: int,
    groups: Mapping[str, Sequence[Sequence[int]]],
    *,
    hardware: Hardware | None = None,
) -> StepCommEstimate:
    """Best step communication any placement of this job could reach: ``groups`` are the rank
    groups of each dimension (pod k holds ranks ``k·gpus_per_pod …``); ``hardware`` the
    largest node/domain of the cluster (default: the profile's)."""
    hardware = hardware or profile_hardware(profile)
    calls = step_calls(parallelism, model)
    by_dimension: dict[str, float] = {}
    for dim in DIMENSIONS:
        first = next((g for g in groups.get(dim, ()) if len(g) > 1), None)
        if not calls[dim] or first is None:
            by_dimension[dim] = 0.0
            continue
        group = _group_of(first, max(1, gpus_per_pod), hardware)
        shapes: Iterable[GroupShape]
        if dim == "pipeline":
            shapes = _pair_shapes(group, hardware)
        elif profile.torus is not None:
            shapes = _torus_shapes(group, hardware, profile.torus)
        else:
            shapes = _shapes(group, hardware)
        by_dimension[dim] = _best_seconds(calls[dim], shapes, profile)
    return StepCommEstimate(by_dimension, sum(by_dimension.values()), 0.0)
