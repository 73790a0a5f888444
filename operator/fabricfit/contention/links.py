"""The shared links of a GPU fabric, named, and what each carries once flows compete for it.

Theory of operation
-------------------
Jobs placed on different GPUs meet on three classes of link (:data:`LINK_CLASSES`), each full
duplex, so a link is named with its direction:

* ``nic`` — one NIC (rail) of one node: ``up`` from the node to its leaf, ``down`` back. Two
  jobs share it only when they share the node (pods smaller than a node);
* ``leaf`` — the uplinks of one rail leaf: rail *r* of one rail group, ``up`` towards the spine,
  ``down`` from it. Traffic that leaves its rail group, or changes rails, climbs them. A node
  without a rail-group label is its own leaf place (``node:<name>``): every hop of it crosses
  the spine, as the cost model prices it, and nobody else is known to share its leaf;
* ``spine`` — the uplinks of one spine block to the core, ``up``/``down``; only traffic
  between spine blocks crosses them. The core switches themselves are taken as non-blocking:
  in a folded Clos the links are the limit, and these are the core's links.

Capacities (:class:`LinkCapacities`) follow the fabric profile the cost model prices with, so
the two never disagree about the hardware: a NIC carries its line rate; a rail leaf's uplinks
carry the line rate of every NIC of that rail under the leaf divided by the profile's leaf
oversubscription; a spine block's uplinks carry its nodes' NIC line rate divided by the larger
of the two oversubscriptions (the cost model's rule for traffic crossing the core,
``cost.nccl``). Each is then multiplied by the profile's sharing efficiency for its class —
the share of a saturated link that competing RDMA flows get together under congestion control
(``nic_sharing_efficiency`` on NIC ports, ``fabric_sharing_efficiency`` on switch-to-switch
links; fitted on published measurements, ``docs/concepts/contention.md``). The uplinks of one
leaf are one pool: flows are taken as spread evenly over them (ideal ECMP or adaptive routing),
which is optimistic where a hash puts two big flows on one link.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot

NIC, LEAF, SPINE = "nic", "leaf", "spine"
LINK_CLASSES = (NIC, LEAF, SPINE)
UP, DOWN = "up", "down"
NO_RAIL = -1


class Link(NamedTuple):
    """One direction of one shared link (see the module docstring)."""

    kind: str  # NIC | LEAF | SPINE
    place: str  # node (nic), leaf place (leaf: rail group, or node:<name>), spine block (spine)
    rail: int  # rail index; NO_RAIL for a spine block
    direction: str  # UP (away from the node) | DOWN (towards it)


def leaf_place(slot: GpuSlot) -> str:
    """The leaf a GPU's NICs hang off: its rail group, or the node alone when unlabelled."""
    return slot.rail_group if slot.rail_group is not None else "node:" + slot.node


def line_bytes_per_s(profile: FabricProfile) -> float:
    """One NIC's line rate, bytes per second per direction."""
    return profile.nic_gbit_per_s / 8.0 * 1e9


@dataclass(frozen=True)
class LinkCapacities:
    """Bytes per second each shared link carries when competing flows saturate it."""

    nic_bytes_per_s: float
    leaf_bytes_per_s: Mapping[tuple[str, int], float]  # (leaf place, rail) -> bytes/s
    spine_bytes_per_s: Mapping[str, float]  # spine block -> bytes/s
    node_leaf_bytes_per_s: float  # one node's rail uplink share: a leaf place not in the map

    def of(self, link: Link) -> float:
        if link.kind == NIC:
            return self.nic_bytes_per_s
        if link.kind == LEAF:
            found = self.leaf_bytes_per_s.get((link.place, link.rail))
            return self.node_leaf_bytes_per_s if found is None else found
        return self.spine_bytes_per_s.get(link.place, self.node_leaf_bytes_per_s)


def link_capacities(snapshot: ClusterSnapshot, profile: FabricProfile) -> LinkCapacities:
    """The capacities of every leaf and spine link of ``snapshot`` on ``profile`` (one pass over
    the nodes; a 12,800-node cluster takes tens of milliseconds, so callers keep the result
    while the nodes' facts do not change)."""
    line = line_bytes_per_s(profile)
    leaf_over = max(1.0, profile.leaf_oversubscription)
    core_over = max(leaf_over, profile.spine_oversubscription)
    fabric = profile.fabric_sharing_efficiency
    members: dict[tuple[str, int], int] = {}
    nics: dict[str, int] = {}
    for node in snapshot.nodes:
        place = node.place.rail_group if node.place.rail_group is not None else "node:" + node.name
        for rail in range(node.rails):
            members[(place, rail)] = members.get((place, rail), 0) + 1
        nics[node.place.spine] = nics.get(node.place.spine, 0) + node.rails
    return LinkCapacities(
        nic_bytes_per_s=line * profile.nic_sharing_efficiency,
        leaf_bytes_per_s={key: n * line / leaf_over * fabric for key, n in members.items()},
        spine_bytes_per_s={key: n * line / core_over * fabric for key, n in nics.items()},
        node_leaf_bytes_per_s=line / leaf_over * fabric,
    )
