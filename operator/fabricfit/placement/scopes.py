"""Where the candidate search looks: the scopes of a job, narrowest first (pure).

A scope is a set of leaf domains (rail groups) the candidates pack the job's blocks into: the
tightest leaf domain that holds the job and the one that holds it on the fewest nodes, the
tightest spine (by leaf domains and as one pseudo-domain) and the spine that holds it on the
fewest nodes, then the whole cluster (by leaf domains and as one pseudo-domain). Pseudo-domains
merge leaves: when a job must cross leaf boundaries anyway, packing its pods densely onto the
fewest nodes can beat keeping leaves apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fabricfit.placement.slots import LeafDomain, PodSlot


def unit_capacity(slots: Sequence[PodSlot], unit_pods: int) -> int:
    """How many units of ``unit_pods`` pods fit in ``slots`` with each unit in one NVLink domain."""
    if unit_pods == 1:
        return len(slots)
    per_domain: dict[str, int] = {}
    for slot in slots:
        per_domain[slot.nvlink_domain] = per_domain.get(slot.nvlink_domain, 0) + 1
    return sum(count // unit_pods for count in per_domain.values())


Scope = tuple[str, tuple[LeafDomain, ...]]


def choose_scopes(domains: Sequence[LeafDomain], units: int, unit_pods: int) -> list[Scope]:
    """Scopes to search, narrowest first: one leaf domain, one spine, the whole cluster."""
    caps = {d.key: unit_capacity(d.slots, unit_pods) for d in domains}
    spines: dict[str, list[LeafDomain]] = {}
    for d in domains:
        spines.setdefault(d.spine, []).append(d)
    spine_cap = {s: sum(caps[d.key] for d in ds) for s, ds in spines.items()}
    ordered = sorted(domains, key=lambda d: (-spine_cap[d.spine], d.spine, -caps[d.key], d.key))
    scopes = _leaf_scopes(domains, caps, units, unit_pods)
    scopes += _spine_scopes(spines, caps, spine_cap, units, unit_pods)
    scopes.append(("cluster", tuple(ordered)))
    if len(ordered) > 1:
        scopes.append(("cluster as one domain", (_merged(ordered, "*"),)))
    return scopes


def _leaf_scopes(
    domains: Sequence[LeafDomain], caps: Mapping[str, int], units: int, unit_pods: int
) -> list[Scope]:
    """The tightest leaf domain that holds the job, and the one that holds it on fewest nodes."""
    leaves = [d for d in domains if caps[d.key] >= units]
    if not leaves:
        return []
    best = min(leaves, key=lambda d: (caps[d.key], d.key))
    scopes: list[Scope] = [(f"leaf {best.key}", (best,))]
    densest = min(leaves, key=lambda d: (nodes_needed(d, units * unit_pods), caps[d.key], d.key))
    if densest is not best:
        scopes.append((f"leaf {densest.key} (fewest nodes)", (densest,)))
    return scopes


def _spine_scopes(
    spines: Mapping[str, list[LeafDomain]],
    caps: Mapping[str, int],
    spine_cap: Mapping[str, int],
    units: int,
    unit_pods: int,
) -> list[Scope]:
    """The tightest spine that holds the job (by leaf domains, and as one pseudo-domain), and
    the spine that holds it on the fewest nodes (as one pseudo-domain)."""
    fitting = [s for s in spines if spine_cap[s] >= units]
    if not fitting:
        return []
    spine = min(fitting, key=lambda s: (spine_cap[s], s))
    scopes: list[Scope] = [(f"spine {spine or '-'}", _fewest_first(spines[spine], caps))]
    merged = {s: _merged(spines[s], f"{s}|*") for s in fitting}
    if len(spines[spine]) > 1:
        scopes.append((f"spine {spine or '-'} as one domain", (merged[spine],)))
    densest = min(
        fitting, key=lambda s: (nodes_needed(merged[s], units * unit_pods), spine_cap[s], s)
    )
    if densest != spine:
        scopes.append((f"spine {densest or '-'} (fewest nodes)", (merged[densest],)))
    return scopes


def nodes_needed(domain: LeafDomain, pods: int) -> int:
    """Fewest nodes of ``domain`` that hold ``pods`` pods (fullest nodes first)."""
    per_node: dict[str, int] = {}
    for slot in domain.slots:
        per_node[slot.node] = per_node.get(slot.node, 0) + 1
    held = 0
    for count, size in enumerate(sorted(per_node.values(), reverse=True), start=1):
        held += size
        if held >= pods:
            return count
    return len(per_node) + 1


def _merged(domains: Sequence[LeafDomain], key: str) -> LeafDomain:
    """One pseudo leaf domain holding every slot of ``domains``: when the job must cross leaf
    boundaries anyway, packing pods densely onto the fewest nodes can beat keeping leaves."""
    slots = tuple(s for d in domains for s in d.slots)
    return LeafDomain(key=key, spine=domains[0].spine, has_rails=False, slots=slots)


def _fewest_first(domains: Sequence[LeafDomain], caps: Mapping[str, int]) -> tuple[LeafDomain, ...]:
    return tuple(sorted(domains, key=lambda d: (-caps[d.key], d.key)))
