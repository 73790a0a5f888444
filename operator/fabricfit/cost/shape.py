"""Where a communicator's ranks sit: a small hashable summary the cost model runs on.

Theory of operation
-------------------
The time of a collective depends on *which tiers* its ranks span, not on their names: how many
NVLink domains (and how many ranks in the fullest and emptiest one), how many NICs each domain
can drive for this group (distinct ``(node, rail)`` pairs), whether every node uses the same rails
(so NCCL's channel *i* stays on rail *i* and one leaf switch carries it), how many rail groups
and spine blocks the group touches. :func:`summarize_group` folds a list of :class:`GpuSlot` into
that :class:`GroupShape` in one O(n) pass of set/dict operations; the shape is then the cache key
for :func:`fabricfit.cost.collectives.estimate_shape`, so a placement search that moves ranks
around pays the O(n) summary once per candidate group and O(1) per cached estimate.

Rail alignment (topology.py): two GPUs on different nodes reach each other over one leaf hop only
when they use the same rail *and* sit in the same rail group; otherwise traffic climbs to the
spine. A group is rail-aligned when every node it uses drives exactly the same set of rails: what
NCCL's rings and trees need, each channel leaving every node on its own NIC. Point-to-point
traffic (send/recv, all-to-all) travels differently (``cost.step``): with PXN it leaves on the
sender's GPU of the receiver's local index, so it stays on rail when every pod's window starts
on the same rail (``window_aligned``); without PXN each rank sends on its own NIC, on rail only
when every rank of the group is on one rail (``one_rail``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

from fabricfit.fabric.topology import GpuSlot

Nic = tuple[str, int]  # (node, rail)
_NO_NICS: frozenset[Nic] = frozenset()
_FIRST = itemgetter(0)
# Shapes of single-node groups by (ranks, rails, unlabelled rail group): a bounded, pure memo.
_ONE_NODE: dict[tuple[int, int, bool], GroupShape] = {}


class CostError(ValueError):
    """The cost model cannot answer the question as asked (empty group, bad algorithm...)."""


@dataclass(frozen=True, slots=True)
class GroupShape:
    """Placement summary of one communicator; hashable, cheap to compare."""

    ranks: int
    nodes: int
    domains: int  # NVLink domains (node, or NVL72 rack, or TPU slice)
    max_per_domain: int
    min_per_domain: int
    min_nics_per_domain: int  # distinct (node, rail) NICs the emptiest domain can drive
    max_per_node: int
    rail_groups: int  # distinct labelled rail groups touched
    ungrouped: bool  # some node has no rail group: every inter-node hop crosses the spine
    spines: int
    rail_aligned: bool  # every node drives the same set of rails
    window_aligned: bool = True  # every rank's pod window starts on the same rail
    one_rail: bool = True  # every rank sends on the same rail

    @property
    def multi_domain(self) -> bool:
        return self.domains > 1

    @property
    def crosses_spine(self) -> bool:
        """Inter-domain traffic climbs above the leaf (other rail group, other rail, no label)."""
        if self.domains <= 1:
            return False
        return self.ungrouped or self.rail_groups > 1 or not self.rail_aligned

    @property
    def crosses_core(self) -> bool:
        return self.domains > 1 and self.spines > 1


def summarize_group(group: Sequence[GpuSlot]) -> GroupShape:
    """Fold the ranks' locations into a :class:`GroupShape` (O(n), a handful of set ops)."""
    return summarize_with_nics(group)[0]


def summarize_with_nics(group: Sequence[GpuSlot]) -> tuple[GroupShape, frozenset[Nic]]:
    """The shape and the NICs carrying inter-domain traffic (empty inside one domain).

    Per-rank work is a few C-level passes (list, Counter, set of pairs); the domain, rail
    group and spine are node attributes, so they are folded over nodes, not ranks."""
    if not group:
        raise CostError("a communicator needs at least one rank")
    nodes = [s.node for s in group]
    if nodes.count(nodes[0]) == len(nodes):  # one node (most TP groups): no network at all
        return _one_node(group), _NO_NICS
    per_node = Counter(nodes)
    nic_set = set(zip(nodes, [s.rail for s in group], strict=True))
    rails = {rail for _node, rail in nic_set}
    nics_per_node = Counter(map(_FIRST, nic_set))
    first_slot = {s.node: s for s in reversed(group)} if len(per_node) > 1 else {nodes[0]: group[0]}
    per_domain: dict[str, int] = {}
    nics_per_domain: dict[str, int] = {}
    for node, slot in first_slot.items():
        domain = slot.nvlink_domain or "node:" + node
        per_domain[domain] = per_domain.get(domain, 0) + per_node[node]
        nics_per_domain[domain] = nics_per_domain.get(domain, 0) + nics_per_node[node]
    rail_groups = {s.rail_group for s in first_slot.values()}
    shape = GroupShape(
        ranks=len(group),
        nodes=len(per_node),
        domains=len(per_domain),
        max_per_domain=max(per_domain.values()),
        min_per_domain=min(per_domain.values()),
        min_nics_per_domain=min(nics_per_domain.values()),
        max_per_node=max(per_node.values()),
        rail_groups=len(rail_groups - {None}),
        ungrouped=None in rail_groups,
        spines=len({s.spine for s in first_slot.values()}),
        # every node uses every rail of the union <=> all nodes drive the same rail set
        rail_aligned=len(nic_set) == len(per_node) * len(rails),
        window_aligned=len({s.window_rail for s in group}) == 1,
        one_rail=len(rails) == 1,
    )
    return shape, (frozenset(nic_set) if len(per_domain) > 1 else _NO_NICS)


def _one_node(group: Sequence[GpuSlot]) -> GroupShape:
    n, first = len(group), group[0]
    key = (n, len({s.rail for s in group}), first.rail_group is None)
    shape = _ONE_NODE.get(key)
    if shape is None:
        rail_groups = 0 if first.rail_group is None else 1
        shape = GroupShape(n, 1, 1, n, n, key[1], n, rail_groups, key[2], 1, True)
        _ONE_NODE[key] = shape
    return shape
