"""Free capacity a candidate leaves behind: the best-fit tie-break between equal plans (pure).

Theory of operation
-------------------
Two candidates with the same predicted step communication are not equal for the jobs queued
behind them: one takes the last free GPUs of a half-used node, the other breaks into a whole
node — and so into the whole-node room of a rail group — that a later multi-node job needed.
Kueue's BestFit and Volcano's bin-packing fight this by taking the tightest domain that holds
the job.

The measure starts from the free GPUs the fragmentation census counts (``quality``: available
nodes, free after other plans' reservations, domains per tier). At the node tier a domain's
free capacity is its free GPUs; above it — NVLink domain, rail group, spine — it is the GPUs of
its *entirely free* nodes, the room a multi-node job can use (what ``fabricfit simulate``
reports as the largest rail-group job). Per tier the measure is the sum of the domains' free
capacity squared. Taking ``t`` of a domain's ``f`` lowers it by ``t·(2f − t)``: least where
``f`` is smallest, i.e. in the tightest domain that holds the pod, and less for a block taken
from one domain than for the same block spread thin over several. That drop is a candidate's
*packing loss*, one number per tier; candidates compare tier by tier, node first (a pod that
fits a half-used node breaks no whole node at all), then the NVLink domain, rail group and
spine whose whole-node room it breaks, lower first. Only the domains a candidate touches change,
so the loss is computed from them alone. Nothing here is tuned: it is best fit, written as a
sum of squares so that splits and whole blocks compare too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.constraints import NO_RESERVATIONS, free_after_reservations
from fabricfit.placement.quality import domain_of
from fabricfit.placement.slots import PodSlot

#: Tiers of the packing loss in the order candidates compare on them (``quality.TIERS`` without
#: the whole cluster). The first counts free GPUs, the others GPUs of entirely free nodes.
PACKING_TIERS: tuple[str, ...] = ("node", "nvlink_domain", "rail_group", "spine")

Loss = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FreeCapacity:
    """Per packing tier the free capacity of each domain; per node its domains and whole GPUs."""

    per_domain: tuple[Mapping[str, int], ...]  # one mapping per tier of PACKING_TIERS
    domains_of: Mapping[str, tuple[str, ...]]  # node name -> its domain key per tier
    whole: Mapping[str, int]  # node name -> its GPUs if every one is free, else 0


def free_capacity(
    snapshot: ClusterSnapshot, reservations: Mapping[str, int] = NO_RESERVATIONS
) -> FreeCapacity:
    """The free capacity of ``snapshot``'s available nodes per domain of every packing tier."""
    node_key, *wider_keys = [domain_of(tier) for tier in PACKING_TIERS]
    per_node: dict[str, int] = {}
    wider: list[dict[str, int]] = [{} for _ in wider_keys]
    domains_of: dict[str, tuple[str, ...]] = {}
    whole: dict[str, int] = {}
    for node in snapshot.nodes:
        if not node.available or node.gpus <= 0:
            continue
        free = free_after_reservations(node, reservations)
        entire = node.gpus if free == node.gpus else 0
        domains = (node_key(node), *(key(node) for key in wider_keys))
        domains_of[node.name] = domains
        whole[node.name] = entire
        per_node[domains[0]] = per_node.get(domains[0], 0) + free
        for tier, domain in enumerate(domains[1:]):
            wider[tier][domain] = wider[tier].get(domain, 0) + entire
    return FreeCapacity(
        per_domain=tuple(MappingProxyType(c) for c in (per_node, *wider)),
        domains_of=MappingProxyType(domains_of),
        whole=MappingProxyType(whole),
    )


def packing_loss(free: FreeCapacity, slots: Sequence[PodSlot], gpus_per_pod: int) -> Loss:
    """Per tier of ``PACKING_TIERS``, how much the candidate ``slots`` lower the sum of squared
    free capacity per domain (see the module doc). A node ``free`` does not know counts as its
    own domain at every tier, holding just what the candidate takes."""
    taken: list[Counter[str]] = [Counter() for _ in PACKING_TIERS]
    touched: set[str] = set()
    for slot in slots:
        domains = free.domains_of.get(slot.node) or (slot.node,) * len(PACKING_TIERS)
        taken[0][domains[0]] += gpus_per_pod
        if slot.node in touched:
            continue  # its whole-node GPUs are gone with its first pod
        touched.add(slot.node)
        for counter, domain in zip(taken[1:], domains[1:], strict=True):
            counter[domain] += free.whole.get(slot.node, 0)
    return tuple(
        sum(t * (2 * max(per_domain.get(d, 0), t) - t) for d, t in counter.items())
        for counter, per_domain in zip(taken, free.per_domain, strict=True)
    )
