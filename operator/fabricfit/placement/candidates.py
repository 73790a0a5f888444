"""Hierarchical candidate generation: which pod goes to which slot, before any scoring.

Theory of operation
-------------------
The job is cut into *blocks* and *units*. A unit is the set of pods one tensor-parallel group
spans (usually a single pod); it must land inside one NVLink domain. A block is a connected set
of pods under the tensor, context, expert and data groups — with the Megatron rank order, one
pipeline stage. Everything inside a block talks with bandwidth-heavy collectives every step, so a
block belongs in one leaf domain (rail group), where its data-parallel rings cost one leaf hop;
consecutive blocks (pipeline neighbours) exchange only point-to-point activations and may sit in
neighbouring leaf domains of the same spine.

A candidate is produced by choosing a *scope* (the smallest leaf domain that holds the whole
job, the leaf domain that holds it on the fewest nodes, the smallest spine that does, or the
whole cluster, each with the fewest leaf domains first; also that spine and the cluster as one
pseudo-domain each, where packing pods onto the fewest nodes can beat keeping leaves, e.g.
half-free nodes in one leaf whose GPU windows do not line up on the same rails), a slot *order*
inside each leaf domain (node-major keeps pods of a unit or an expert group on one node;
position-major puts pods one per node on the same GPU window, i.e. the same rails; dense fills
the nodes with the most free windows first, so the job uses the fewest nodes), and a *packing*
rule for blocks (best fit: the tightest leaf domain that holds the whole block; first fit: stay
in the previous block's domain while it fits). A block that fits no leaf domain whole is split
inside one spine if any spine holds it, over the leaf domains with the most room (when no
spine holds it: fullest spine first, or the fewest leaf domains whatever their spine), and cut
between *sub-blocks* (pods joined by tensor, context or expert groups) so that an expert
group's all-to-all does not straddle a leaf boundary it could avoid. The search scores every
distinct candidate with the cost model; this module never scores.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabricfit.placement.layout import RankLayout
from fabricfit.placement.scopes import choose_scopes, unit_capacity
from fabricfit.placement.slots import LeafDomain, PodSlot, ordered_slots

Unit = tuple[int, ...]
Block = tuple[Unit, ...]
Assignment = tuple[PodSlot, ...]
ORDERS = ("node", "position", "dense")
PACKINGS = ("best-fit", "first-fit")


@dataclass(frozen=True, slots=True)
class PlanCandidate:
    """One complete pod→slot assignment and how it was produced."""

    label: str
    slots: Assignment


#: The groups that join pods into a block: a training step's bandwidth-heavy collectives. A
#: served model's replicas never talk, so its blocks are replicas (``placement.serving``).
TRAINING_BLOCK_KINDS = ("tensor", "context", "expert", "data")


def job_blocks(
    layout: RankLayout,
    *,
    keep_units: bool = True,
    block_kinds: tuple[str, ...] = TRAINING_BLOCK_KINDS,
    unit_kinds: tuple[str, ...] = ("tensor",),
) -> tuple[Block, ...]:
    """Blocks of units of pods, in rank order: pods joined by a group of ``block_kinds`` share
    a block, by one of ``unit_kinds`` a unit; ``keep_units=False`` makes every pod its own
    unit (tensor groups may then span NVLink domains, for ``tensor: Preferred``)."""
    pods = layout.pods
    unit_parent = list(range(pods))
    block_parent = list(range(pods))
    for kind in block_kinds:
        for group in layout.groups[kind]:
            first = layout.pod_of(group[0])
            for rank in group[1:]:
                _union(block_parent, first, layout.pod_of(rank))
                if kind in unit_kinds and keep_units:
                    _union(unit_parent, first, layout.pod_of(rank))
    units: dict[int, list[int]] = {}
    for pod in range(pods):
        units.setdefault(_find(unit_parent, pod), []).append(pod)
    blocks: dict[int, list[Unit]] = {}
    for members in sorted(units.values()):
        blocks.setdefault(_find(block_parent, members[0]), []).append(tuple(members))
    return tuple(tuple(b) for b in sorted(blocks.values()))


def job_sub_blocks(layout: RankLayout) -> dict[int, int]:
    """Pod → sub-block id: pods joined by tensor, context or expert groups (not data). When a
    block must be split over leaf domains it is cut between sub-blocks, so an expert group's
    all-to-all stays on the fastest tier that holds it."""
    parent = list(range(layout.pods))
    for kind in ("tensor", "context", "expert"):
        for group in layout.groups[kind]:
            first = layout.pod_of(group[0])
            for rank in group[1:]:
                _union(parent, first, layout.pod_of(rank))
    return {pod: _find(parent, pod) for pod in range(layout.pods)}


def _find(parent: list[int], item: int) -> int:
    while parent[item] != item:
        parent[item] = parent[parent[item]]
        item = parent[item]
    return item


def _union(parent: list[int], a: int, b: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        parent[max(ra, rb)] = min(ra, rb)


class SlotOrders:
    """Slot orders of leaf domains, computed once per candidate generation (keyed by domain
    key, which is unique within one generation)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], tuple[PodSlot, ...]] = {}
        self._caps: dict[tuple[str, int], int] = {}

    def __call__(self, domain: LeafDomain, order: str) -> tuple[PodSlot, ...]:
        key = (domain.key, order)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = ordered_slots(domain.slots, order)
        return found

    def capacity(self, domain: LeafDomain, unit_pods: int) -> int:
        """``unit_capacity`` of the domain's slots (the same in every order)."""
        key = (domain.key, unit_pods)
        found = self._caps.get(key)
        if found is None:
            found = self._caps[key] = unit_capacity(domain.slots, unit_pods)
        return found


class FreeSlots:
    """The free slots of one leaf domain in candidate order, grouped by NVLink domain, with the
    whole units they hold kept current as slots are taken.

    ``take(size)`` gives the first ``size`` free slots of the NVLink domain whose first free slot
    comes first among those that still hold ``size`` — what regrouping the remaining slots for
    every unit gave, which was quadratic in the slots of a merged scope (a 1,024-GPU job of
    two-tray units on 4,096 GB200 trays spent most of its plan there). One lazy heap per unit
    size orders the domains by their first free slot; lengths only shrink, so an entry whose
    domain has moved on or shrunk below the size is dropped when it reaches the top."""

    def __init__(self, slots: Sequence[PodSlot], unit_pods: int) -> None:
        self.unit_pods = unit_pods
        self._groups: dict[str, deque[tuple[int, PodSlot]]] = {}
        self._heaps: dict[int, list[tuple[int, str]]] = {}
        # Single-pod units need no grouping: the next free slot in order, by a cursor. Building
        # groups of every slot of the scope for the one pod of a small job was most of its plan
        # (5,000 one-GPU jobs replayed by ``fabricfit simulate``).
        self._in_order = slots if unit_pods == 1 else ()
        self._next = 0
        if unit_pods == 1:
            self.units = len(slots)
            return
        for position, slot in enumerate(slots):
            self._groups.setdefault(slot.nvlink_domain, deque()).append((position, slot))
        self.units = sum(len(g) // unit_pods for g in self._groups.values())

    def _heap(self, size: int) -> list[tuple[int, str]]:
        heap = self._heaps.get(size)
        if heap is None:
            heap = [(g[0][0], k) for k, g in self._groups.items() if len(g) >= size]
            heapq.heapify(heap)
            self._heaps[size] = heap
        return heap

    def take(self, size: int) -> list[PodSlot]:
        if self.unit_pods == 1:
            chosen = list(self._in_order[self._next : self._next + size])
            self._next += size
            self.units -= size
            return chosen
        heap = self._heap(size)
        while True:
            position, key = heap[0]  # the caller checked the capacity: an entry holds it
            group = self._groups[key]
            if len(group) >= size and group[0][0] == position:
                break
            heapq.heappop(heap)
        before = len(group)
        chosen = [group.popleft()[1] for _ in range(size)]
        self.units += len(group) // self.unit_pods - before // self.unit_pods
        if group:
            for want, other in self._heaps.items():
                if len(group) >= want:
                    heapq.heappush(other, (group[0][0], key))
        return chosen


class _Packer:
    """Mutable packing state for one candidate; slots are consumed, never shared."""

    def __init__(
        self,
        domains: Sequence[LeafDomain],
        order: str,
        unit_pods: int,
        sub_of: Mapping[int, int],
        orders: SlotOrders,
    ) -> None:
        self.domains = list(domains)
        self.sub_of = sub_of
        self.order, self.orders = order, orders
        # A domain's free slots in this candidate's order, made when the first is taken (a small
        # job takes from a few of thousands of domains).
        self.free: dict[int, FreeSlots] = {}
        self.unit_pods = unit_pods
        self.placed: dict[int, PodSlot] = {}
        # Units each domain still holds, kept current as slots are taken (read once per domain
        # and block: recounting every domain's slots for each block was most of a large plan).
        self.caps = [orders.capacity(d, unit_pods) for d in self.domains]

    def capacity(self, index: int) -> int:
        return self.caps[index]

    def take_unit(self, index: int, unit: Unit) -> None:
        free = self.free.get(index)
        if free is None:
            slots = self.orders(self.domains[index], self.order)
            free = self.free[index] = FreeSlots(slots, self.unit_pods)
        for pod, slot in zip(unit, free.take(len(unit)), strict=True):
            self.placed[pod] = slot
        self.caps[index] = free.units

    def place_block(self, block: Block, packing: str, previous: int | None) -> int | None:
        """Place ``block``; returns the domain that took its first unit (None: no room)."""
        need = len(block)
        caps = list(self.caps)
        whole = [i for i, c in enumerate(caps) if c >= need]
        if whole:
            target = self._choose_whole(whole, caps, packing, previous)
            for unit in block:
                self.take_unit(target, unit)
            return target
        if sum(caps) < need:
            return None
        order = self._split_order(caps, need, packing, previous)
        pending: list[Unit] = []
        first: int | None = None
        for part in self._sub_blocks(block):
            fit = next((i for i in order if self.caps[i] >= len(part)), None)
            if fit is not None:
                for unit in part:
                    self.take_unit(fit, unit)
                first = fit if first is None else first
            else:
                pending.extend(part)
        for index in order:
            while pending and self.capacity(index) > 0:
                self.take_unit(index, pending.pop(0))
                first = index if first is None else first
        return first

    def _sub_blocks(self, block: Block) -> list[list[Unit]]:
        parts: dict[int, list[Unit]] = {}
        for unit in block:
            parts.setdefault(self.sub_of.get(unit[0], unit[0]), []).append(unit)
        return list(parts.values())

    def _split_order(
        self, caps: list[int], need: int, packing: str, previous: int | None
    ) -> list[int]:
        """Domains to fill a block that fits no single one: inside one spine if any spine holds
        it (the previous block's spine first), fullest domains first, so the block crosses as
        few leaves as possible and no spine boundary unless it must."""
        spine_caps: dict[str, int] = {}
        for i, cap in enumerate(caps):
            spine = self.domains[i].spine
            spine_caps[spine] = spine_caps.get(spine, 0) + cap
        fitting = [s for s, cap in spine_caps.items() if cap >= need]
        prev_spine = self.domains[previous].spine if previous is not None else None
        by_room = sorted(range(len(caps)), key=lambda i: (-caps[i], i))
        if not fitting:
            if packing == "first-fit":  # the fullest spine first, then the next
                return sorted(by_room, key=lambda i: -spine_caps[self.domains[i].spine])
            return _fewest_leaves(by_room, caps, need)
        if prev_spine in fitting:
            spine = prev_spine
        elif packing == "first-fit":
            spine = min(
                fitting, key=lambda s: min(i for i in by_room if self.domains[i].spine == s)
            )
        else:
            spine = min(fitting, key=lambda s: (spine_caps[s], s))
        return [i for i in by_room if self.domains[i].spine == spine]

    def _choose_whole(
        self, whole: list[int], caps: list[int], packing: str, previous: int | None
    ) -> int:
        if packing == "first-fit":
            if previous is not None and previous in whole:
                return previous
            return whole[0]
        prev_spine = self.domains[previous].spine if previous is not None else None
        return min(whole, key=lambda i: (self.domains[i].spine != prev_spine, caps[i], i))


def _fewest_leaves(by_room: list[int], caps: list[int], need: int) -> list[int]:
    """Leaf domains most room first whatever their spine, the tightest one that holds the
    remainder last (the fewest leaves; a job over two spines lands e.g. 26 + 22, not 26 + 21 +
    1 with a lone pod behind the other spine)."""
    order: list[int] = []
    remaining = need
    for index in by_room:
        if index in order:
            continue
        fits = [i for i in by_room if i not in order and caps[i] >= remaining]
        if fits:
            last = min(fits, key=lambda i: (caps[i], i))
            order.append(last)
            break
        order.append(index)
        remaining -= caps[index]
    return order + [i for i in by_room if i not in order]


def pack_blocks(
    blocks: Sequence[Block],
    domains: Sequence[LeafDomain],
    order: str,
    packing: str,
    *,
    sub_of: Mapping[int, int] | None = None,
    orders: SlotOrders | None = None,
) -> Assignment | None:
    """Place every block in ``domains``; None when they do not hold the job."""
    unit_pods = max((len(u) for b in blocks for u in b), default=1)
    packer = _Packer(domains, order, unit_pods, sub_of or {}, orders or SlotOrders())
    previous: int | None = None
    for block in blocks:
        previous = packer.place_block(block, packing, previous)
        if previous is None:
            return None
    pods = len(packer.placed)
    return tuple(packer.placed[p] for p in range(pods))


def generate_candidates(
    blocks: Sequence[Block],
    domains: Sequence[LeafDomain],
    sub_of: Mapping[int, int] | None = None,
) -> tuple[PlanCandidate, ...]:
    """Every distinct candidate over scopes × orders × packings, in a fixed order."""
    unit_pods = max(len(u) for b in blocks for u in b)
    units = sum(len(b) for b in blocks)
    seen: set[Assignment] = set()
    out: list[PlanCandidate] = []
    orders = SlotOrders()
    for scope_label, scope in choose_scopes(domains, units, unit_pods):
        for order in ORDERS:
            for packing in PACKINGS:
                slots = pack_blocks(blocks, scope, order, packing, sub_of=sub_of, orders=orders)
                if slots is None or slots in seen:
                    continue
                seen.add(slots)
                out.append(
                    PlanCandidate(label=f"{scope_label}, {order}-major, {packing}", slots=slots)
                )
    return tuple(out)
