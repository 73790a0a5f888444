"""Kueue Topology-Aware Scheduling, BestFit: where Kueue would put a job's pods.

Theory of operation
-------------------
Kueue TAS (kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling) sees a tree of topology
levels — here spine ⊃ rail group ⊃ rack ⊃ hostname, the levels ``render.kueue`` writes — and
counts *pods* per domain; it knows neither ranks nor rails. With the job preferred at a level
(``kueue.x-k8s.io/podset-preferred-topology``; rail group by default), its BestFit algorithm
(``pkg/cache/scheduler/tas_flavor_snapshot.go`` at v0.19.2, ``findLevelWithFitDomains`` and
``updateCountsToMinimum``):

1. climbs from the preferred level to the lowest level where one domain holds every pod, and
   takes the tightest such domain (fewest free pod slots, ties by name);
2. when no single domain holds the job even at the top, takes top-level domains with the most
   free slots first and the tightest one that holds the remainder last;
3. walks down the tree one level at a time, pooling the children of *every* domain chosen at
   the level above and taking them most-free first, the last one best-fit (so a job over two
   spines can land 26 + 22 on two rail groups although one spine was chosen for 47);
4. at the hostname level takes the node's lowest free GPUs (the device plugin's choice);
5. maps ranks to pods in lexicographic order of the pods' level values (Kueue's
   ``TopologyUngater``), i.e. by (spine, rail group, rack, node), then GPU window.

A ``required`` annotation at a level gives the same placement as ``preferred`` there whenever
Kueue admits the job (it only stops climbing), so the preferred variants cover it.
Nodes without a rail-group label use their leaf domain key (rack or node) at that level, as
``slots.leaf_key`` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabricfit.placement.slots import LeafDomain, PodSlot

LEVELS = ("spine", "rail-group", "rack", "hostname")


#: A slot with its (spine, rail group or leaf, rack, node) path, read once per call.
Keyed = tuple[tuple[str, ...], PodSlot]


def _path(slot: PodSlot) -> tuple[str, ...]:
    return (slot.spine, slot.rail_group or slot.leaf, slot.rack, slot.node)


def _group(slots: Sequence[Keyed], depth: int) -> dict[tuple[str, ...], list[Keyed]]:
    groups: dict[tuple[str, ...], list[Keyed]] = {}
    for keyed in slots:
        groups.setdefault(keyed[0][: depth + 1], []).append(keyed)
    return groups


def _minimum(groups: dict[tuple[str, ...], list[Keyed]], need: int) -> list[tuple[str, ...]]:
    """BestFit over sibling domains: most free first, the last one the tightest that holds the
    remainder; [] when all of them together do not hold ``need``."""
    order = sorted(groups, key=lambda k: (-len(groups[k]), k))
    taken: list[tuple[str, ...]] = []
    remaining = need
    for index, key in enumerate(order):
        if len(groups[key]) >= remaining:  # the roomiest left holds the rest: best-fit it
            fits = (k for k in order[index:] if len(groups[k]) >= remaining)
            taken.append(min(fits, key=lambda k: (len(groups[k]), k)))
            return taken
        taken.append(key)
        remaining -= len(groups[key])
    return []


def kueue_bestfit(
    domains: Sequence[LeafDomain], pods: int, *, level: str = "rail-group"
) -> tuple[PodSlot, ...] | None:
    """Kueue TAS BestFit preferred at ``level`` (one of ``LEVELS``), ranks in lexicographic
    order."""
    slots = [(_path(s), s) for d in domains for s in d.slots]
    if len(slots) < pods or pods <= 0:
        return None
    chosen: list[tuple[str, ...]] = []
    depth = LEVELS.index(level)
    while not chosen:
        groups = _group(slots, depth)
        fitting = [k for k, v in groups.items() if len(v) >= pods]
        if fitting:
            chosen = [min(fitting, key=lambda k: (len(groups[k]), k))]
        elif depth == 0:
            chosen = _minimum(groups, pods)
            if not chosen:
                return None
        else:
            depth -= 1
    while depth < len(LEVELS) - 1:
        # Only the slots under the domains chosen so far can be chosen below them.
        slots = _under(slots, chosen, depth)
        depth += 1
        chosen = _minimum(_group(slots, depth), pods)
    per_node = _group(_under(slots, chosen, depth), depth)
    out: list[Keyed] = []
    for key in chosen:  # whole nodes most free first, the best-fit one last
        out.extend(sorted(per_node[key], key=lambda k: k[1].gpus)[: pods - len(out)])
    out.sort(key=lambda k: (k[0], k[1].gpus))
    return tuple(slot for _, slot in out)


def _under(slots: Sequence[Keyed], chosen: list[tuple[str, ...]], depth: int) -> list[Keyed]:
    keep = set(chosen)
    return [k for k in slots if k[0][: depth + 1] in keep]
