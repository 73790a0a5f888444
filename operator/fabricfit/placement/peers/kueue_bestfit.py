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
#: The levels every slot of a leaf domain shares (spine, rail group or leaf).
DOMAIN_DEPTH = 1


def _path(slot: PodSlot) -> tuple[str, ...]:
    return (slot.spine, slot.rail_group or slot.leaf, slot.rack, slot.node)


def _counts(domains: Sequence[LeafDomain], depth: int) -> dict[tuple[str, ...], int]:
    """Free pod slots per domain at ``depth``; down to the rail group, counted per leaf
    domain without visiting its slots."""
    counts: dict[tuple[str, ...], int] = {}
    for domain in domains:
        if depth <= DOMAIN_DEPTH:
            key = _path(domain.slots[0])[: depth + 1]
            counts[key] = counts.get(key, 0) + len(domain.slots)
            continue
        node, key = "", ()
        for slot in domain.slots:  # node-major: a node's slots share its path
            if slot.node != node:
                node, key = slot.node, _path(slot)[: depth + 1]
            counts[key] = counts.get(key, 0) + 1
    return counts


def _keyed_counts(slots: Sequence[Keyed], depth: int) -> dict[tuple[str, ...], int]:
    counts: dict[tuple[str, ...], int] = {}
    for path, _ in slots:
        key = path[: depth + 1]
        counts[key] = counts.get(key, 0) + 1
    return counts


def _minimum(counts: dict[tuple[str, ...], int], need: int) -> list[tuple[str, ...]]:
    """BestFit over sibling domains: most free first, the last one the tightest that holds the
    remainder; [] when all of them together do not hold ``need``."""
    order = sorted(counts, key=lambda k: (-counts[k], k))
    taken: list[tuple[str, ...]] = []
    remaining = need
    for index, key in enumerate(order):
        if counts[key] >= remaining:  # the roomiest left holds the rest: best-fit it
            fits = (k for k in order[index:] if counts[k] >= remaining)
            taken.append(min(fits, key=lambda k: (counts[k], k)))
            return taken
        taken.append(key)
        remaining -= counts[key]
    return []


def _climb(
    domains: Sequence[LeafDomain], pods: int, depth: int
) -> tuple[list[tuple[str, ...]], int]:
    """The tightest domain holding every pod at the lowest level from ``depth`` up, else the
    top-level domains BestFit takes ([] when the cluster does not hold the job)."""
    while True:
        counts = _counts(domains, depth)
        fitting = [k for k, n in counts.items() if n >= pods]
        if fitting:
            return [min(fitting, key=lambda k: (counts[k], k))], depth
        if depth == 0:
            return _minimum(counts, pods), depth
        depth -= 1


def kueue_bestfit(
    domains: Sequence[LeafDomain], pods: int, *, level: str = "rail-group"
) -> tuple[PodSlot, ...] | None:
    """Kueue TAS BestFit preferred at ``level`` (one of ``LEVELS``), ranks in lexicographic
    order."""
    domains = [d for d in domains if d.slots]
    if sum(len(d.slots) for d in domains) < pods or pods <= 0:
        return None
    chosen, depth = _climb(domains, pods, LEVELS.index(level))
    if not chosen:
        return None
    shared = min(depth, DOMAIN_DEPTH) + 1  # only the leaf domains under the choice are read
    keep = {key[:shared] for key in chosen}
    domains = [d for d in domains if _path(d.slots[0])[:shared] in keep]
    slots = _under([(_path(s), s) for d in domains for s in d.slots], chosen, depth)
    while depth < len(LEVELS) - 1:
        depth += 1
        chosen = _minimum(_keyed_counts(slots, depth), pods)
        # Only the slots under the domains chosen so far can be chosen below them.
        slots = _under(slots, chosen, depth)
    per_node: dict[tuple[str, ...], list[Keyed]] = {}
    for keyed in slots:
        per_node.setdefault(keyed[0], []).append(keyed)
    out: list[Keyed] = []
    for key in chosen:  # whole nodes most free first, the best-fit one last
        out.extend(sorted(per_node[key], key=lambda k: k[1].gpus)[: pods - len(out)])
    out.sort(key=lambda k: (k[0], k[1].gpus))
    return tuple(slot for _, slot in out)


def _under(slots: Sequence[Keyed], chosen: list[tuple[str, ...]], depth: int) -> list[Keyed]:
    keep = set(chosen)
    return [k for k in slots if k[0][: depth + 1] in keep]
