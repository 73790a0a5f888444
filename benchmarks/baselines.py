"""Baseline placers the benchmark compares fabricfit against (benchmarks only, not the product).

Theory of operation
-------------------
Each baseline returns a pod→slot assignment over the same pod slots fabricfit uses (a window of
``gpusPerPod`` free GPUs on one node, same GPU-index convention), so every plan is priced by the
same cost model and only the *choice* differs:

* ``spread`` — kube-scheduler's default scoring (NodeResourcesFit LeastAllocated plus spreading):
  pods in index order, each to the node with the most free GPUs, ties by name; the device
  plugin hands out the lowest free GPUs.
* ``bestfit`` — Kueue TAS BestFit with levels spine ⊃ rail group ⊃ rack ⊃ hostname, preferred at
  the rail-group level: climb to the lowest level where one domain holds all pods (at the top,
  take domains with the most pods first and best-fit the last one), walk down filling children
  most-free first with the last child best-fit, then give ranks to pods in lexicographic order of
  the level values (Kueue's ``TopologyUngater`` rank mapping).
* ``random`` — a uniformly random feasible set of slots (seeded).

Kueue counts pods, not rails: when several pods share a node it takes its lowest free GPUs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from fabricfit.placement.slots import LeafDomain, PodSlot

Assignment = tuple[PodSlot, ...]
LEVELS = ("spine", "rail", "rack", "node")


def all_slots(domains: Sequence[LeafDomain]) -> list[PodSlot]:
    return [s for d in domains for s in d.slots]


def _level_key(slot: PodSlot, depth: int) -> tuple[str, ...]:
    values = (slot.spine, slot.rail_group or slot.leaf, slot.rack, slot.node)
    return values[: depth + 1]


def spread(domains: Sequence[LeafDomain], pods: int, seed: int = 0) -> Assignment | None:
    """Most free node first for every pod (LeastAllocated), lowest free GPUs first."""
    per_node: dict[str, list[PodSlot]] = {}
    for slot in all_slots(domains):
        per_node.setdefault(slot.node, []).append(slot)
    chosen: list[PodSlot] = []
    for _ in range(pods):
        candidates = [n for n, free in per_node.items() if free]
        if not candidates:
            return None
        node = min(candidates, key=lambda n: (-len(per_node[n]), n))
        chosen.append(per_node[node].pop(0))
    return tuple(chosen)


def _best_fit_take(groups: dict[tuple[str, ...], list[PodSlot]], need: int) -> list[PodSlot]:
    """Kueue's BestFit over sibling domains: most free first, the last one the tightest fit."""
    order = sorted(groups, key=lambda k: (-len(groups[k]), k))
    taken: list[tuple[str, ...]] = []
    remaining = need
    for key in order:
        if remaining <= 0:
            break
        if len(groups[key]) >= remaining:
            fits = [k for k in order if k not in taken and len(groups[k]) >= remaining]
            taken.append(min(fits, key=lambda k: (len(groups[k]), k)))
            remaining = 0
            break
        taken.append(key)
        remaining -= len(groups[key])
    if remaining > 0:
        return []
    out: list[PodSlot] = []
    left = need
    for key in taken:
        part = _descend(groups[key], left if key == taken[-1] else len(groups[key]))
        out.extend(part)
        left -= len(part)
    return out


def _descend(slots: list[PodSlot], need: int) -> list[PodSlot]:
    depth = _depth_of(slots)
    if depth >= len(LEVELS) - 1:
        return sorted(slots, key=lambda s: s.gpus)[:need]
    children: dict[tuple[str, ...], list[PodSlot]] = {}
    for slot in slots:
        children.setdefault(_level_key(slot, depth + 1), []).append(slot)
    return _best_fit_take(children, need)


def _depth_of(slots: list[PodSlot]) -> int:
    for depth in range(len(LEVELS) - 1, -1, -1):
        if len({_level_key(s, depth) for s in slots}) == 1:
            return depth
    return -1


def bestfit(domains: Sequence[LeafDomain], pods: int, seed: int = 0) -> Assignment | None:
    """Kueue TAS BestFit, preferred at the rail-group level, lexicographic rank order."""
    slots = all_slots(domains)
    if len(slots) < pods:
        return None
    chosen: list[PodSlot] = []
    for depth in (1, 0):
        groups: dict[tuple[str, ...], list[PodSlot]] = {}
        for slot in slots:
            groups.setdefault(_level_key(slot, depth), []).append(slot)
        fitting = [k for k, v in groups.items() if len(v) >= pods]
        if fitting:
            key = min(fitting, key=lambda k: (len(groups[k]), k))
            chosen = _descend(groups[key], pods)
            break
    else:
        by_spine: dict[tuple[str, ...], list[PodSlot]] = {}
        for slot in slots:
            by_spine.setdefault(_level_key(slot, 0), []).append(slot)
        chosen = _best_fit_take(by_spine, pods)
    if len(chosen) < pods:
        return None
    chosen.sort(key=lambda s: (_level_key(s, 3), s.gpus))
    return tuple(chosen)


def random_feasible(domains: Sequence[LeafDomain], pods: int, seed: int = 0) -> Assignment | None:
    slots = all_slots(domains)
    if len(slots) < pods:
        return None
    rng = random.Random(seed)
    return tuple(rng.sample(slots, pods))


BASELINES: dict[str, Callable[[Sequence[LeafDomain], int, int], Assignment | None]] = {
    "spread": spread,
    "bestfit": bestfit,
    "random": random_feasible,
}
