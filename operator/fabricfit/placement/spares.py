"""Spare nodes: the trays of each multi-node NVLink domain that ordinary placement leaves free.

Theory of operation
-------------------
Operators of rack-scale NVLink (GB200 NVL72: 18 trays per domain) keep a few trays of every rack
free, so that a failed or drained tray of a running job is replaced inside the same rack and its
tensor and expert groups keep NVLink. How many comes from the job's ``placement.spares`` or, when
that is omitted, from its fabric profile's ``spare_nodes_per_nvlink_domain``
(:func:`spares_wanted`).

Which nodes are spares is a function of the snapshot alone, so every plan and re-placement agrees
on them and they stay the same from one reconcile to the next while the cluster does not change:
in each NVLink domain shared by two or more nodes, among the nodes that can take work (available,
with a free GPU after other plans' reservations), the ``N`` with the most free GPUs, ties broken
by the highest name (the last trays of a rack). A job placed around them leaves them the freest
nodes, so it does not move them; when a spare is used, the next freest node of the domain
becomes one.
Nodes alone in their NVLink domain (8-GPU HGX nodes) are never spares.
The spares of a plan are picked among the nodes that job could use (its nodeSelector, required
affinity, tolerations and GPU source, :func:`spares_for`): a rack of another pool, which the job
cannot reach anyway, neither holds its spares nor shows up in its ``status.spares``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo
from fabricfit.placement.constraints import free_after_reservations, node_rejection
from fabricfit.placement.request import PlacementRequest

SOURCE_SPEC = "spec.placement.spares"


def _no_domains() -> Mapping[str, tuple[str, ...]]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class SpareSet:
    """The spares of one plan: ``per_domain`` wanted, where that number came from, and the
    spare nodes of every multi-node NVLink domain (sorted by name)."""

    per_domain: int = 0
    source: str = ""
    by_domain: Mapping[str, tuple[str, ...]] = field(default_factory=_no_domains)

    @property
    def nodes(self) -> tuple[str, ...]:
        """Every spare node, sorted by name."""
        return tuple(sorted(n for names in self.by_domain.values() for n in names))

    def __contains__(self, node: object) -> bool:
        return any(node in names for names in self.by_domain.values())

    def to_json_dict(self) -> dict[str, object]:
        """The ``spares`` object of ``fabricfit plan --json`` (field names are a contract)."""
        return {
            "per_nvlink_domain": self.per_domain,
            "source": self.source,
            "nodes": list(self.nodes),
            "by_nvlink_domain": {d: list(n) for d, n in sorted(self.by_domain.items())},
        }


NO_SPARES = SpareSet()


def spares_wanted(request: PlacementRequest, profile: FabricProfile) -> tuple[int, str]:
    """Spare nodes per NVLink domain for ``request`` and where the number comes from."""
    if request.spares_per_domain is not None:
        return request.spares_per_domain, SOURCE_SPEC
    count = int(getattr(profile, "spare_nodes_per_nvlink_domain", 0) or 0)
    name = str(getattr(profile, "name", ""))
    return count, f"fabric {name}" if count else ""


def shared_domains(snapshot: ClusterSnapshot) -> Mapping[str, tuple[NodeInfo, ...]]:
    """NVLink domain → its nodes, for the domains of two or more nodes (name order)."""
    members: dict[str, list[NodeInfo]] = defaultdict(list)
    for node in snapshot.nodes:
        members[node.place.nvlink_domain or node.name].append(node)
    return {d: tuple(nodes) for d, nodes in sorted(members.items()) if len(nodes) > 1}


def choose_spares(
    snapshot: ClusterSnapshot,
    per_domain: int,
    reservations: Mapping[str, int],
    *,
    source: str = "",
    eligible: Collection[str] | None = None,
) -> SpareSet:
    """The spare nodes of ``snapshot`` (see the module doc); none when ``per_domain`` is 0.
    With ``eligible``, only those node names can be spares (the domains stay whole)."""
    if per_domain <= 0:
        return SpareSet(per_domain=0, source=source)
    chosen: dict[str, tuple[str, ...]] = {}
    for domain, nodes in shared_domains(snapshot).items():
        free = {n.name: free_after_reservations(n, reservations) for n in nodes}
        usable = [
            n
            for n in nodes
            if n.available and free[n.name] > 0 and (eligible is None or n.name in eligible)
        ]
        ranked = sorted(usable, key=lambda n: (free[n.name], n.name), reverse=True)
        picked = tuple(sorted(n.name for n in ranked[:per_domain]))
        if picked:
            chosen[domain] = picked
    return SpareSet(per_domain=per_domain, source=source, by_domain=MappingProxyType(chosen))


def spares_for(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    reservations: Mapping[str, int],
    *,
    eligible: Collection[str] | None = None,
) -> SpareSet:
    """The spares a plan of ``request`` on ``snapshot`` leaves free, among nodes it could use
    (``eligible``: their names, when the caller has already filtered the nodes)."""
    count, source = spares_wanted(request, profile)
    if count <= 0:
        return SpareSet(per_domain=0, source=source)
    if eligible is None:
        eligible = {
            n.name for n in snapshot.nodes if node_rejection(n, request, reservations) is None
        }
    return choose_spares(snapshot, count, reservations, source=source, eligible=eligible)
