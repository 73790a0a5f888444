"""Kueue Topology-Aware Scheduling, BestFit: where Kueue would put a job's pods.

Theory of operation
-------------------
Kueue TAS (kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling) sees a tree of topology
levels — here spine ⊃ rail group ⊃ rack ⊃ hostname, the levels ``render.kueue`` writes — and
counts *pods* per domain; it knows neither ranks nor rails. With the job preferred at the
rail-group level (``kueue.x-k8s.io/podset-preferred-topology``), its BestFit algorithm:

1. climbs from the preferred level to the lowest level where one domain holds every pod, and
   takes the tightest such domain (fewest free pod slots, ties by name);
2. when no single domain holds the job even at the top, takes top-level domains with the most
   free slots first and the tightest one that holds the remainder last;
3. walks down the tree filling child domains most-free first, the last child best-fit;
4. at the hostname level takes the node's lowest free GPUs (the device plugin's choice);
5. maps ranks to pods in lexicographic order of the pods' level values (Kueue's
   ``TopologyUngater``), i.e. by (spine, rail group, rack, node), then GPU window.

Nodes without a rail-group label use their leaf domain key (rack or node) at that level, as
``slots.leaf_key`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabricfit.placement.slots import LeafDomain, PodSlot

LEVELS = ("spine", "rail-group", "rack", "hostname")
PREFERRED_DEPTH = 1  # rail group


def _level_key(slot: PodSlot, depth: int) -> tuple[str, ...]:
    values = (slot.spine, slot.rail_group or slot.leaf, slot.rack, slot.node)
    return values[: depth + 1]


def _group(slots: Sequence[PodSlot], depth: int) -> dict[tuple[str, ...], list[PodSlot]]:
    groups: dict[tuple[str, ...], list[PodSlot]] = {}
    for slot in slots:
        groups.setdefault(_level_key(slot, depth), []).append(slot)
    return groups


def _best_fit_take(groups: dict[tuple[str, ...], list[PodSlot]], need: int) -> list[PodSlot]:
    """BestFit over sibling domains: most free first, the last one the tightest that fits."""
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


def _depth_of(slots: Sequence[PodSlot]) -> int:
    for depth in range(len(LEVELS) - 1, -1, -1):
        if len({_level_key(s, depth) for s in slots}) == 1:
            return depth
    return -1


def _descend(slots: Sequence[PodSlot], need: int) -> list[PodSlot]:
    depth = _depth_of(slots)
    if depth >= len(LEVELS) - 1:
        return sorted(slots, key=lambda s: s.gpus)[:need]
    return _best_fit_take(_group(slots, depth + 1), need)


def kueue_bestfit(domains: Sequence[LeafDomain], pods: int) -> tuple[PodSlot, ...] | None:
    """Kueue TAS BestFit preferred at the rail-group level, ranks in lexicographic order."""
    slots = [s for d in domains for s in d.slots]
    if len(slots) < pods or pods <= 0:
        return None
    chosen: list[PodSlot] = []
    for depth in range(PREFERRED_DEPTH, -1, -1):
        groups = _group(slots, depth)
        fitting = [k for k, v in groups.items() if len(v) >= pods]
        if fitting:
            key = min(fitting, key=lambda k: (len(groups[k]), k))
            chosen = _descend(groups[key], pods)
            break
    else:
        chosen = _best_fit_take(_group(slots, 0), pods)
    if len(chosen) < pods:
        return None
    chosen.sort(key=lambda s: (_level_key(s, len(LEVELS) - 1), s.gpus))
    return tuple(chosen)
