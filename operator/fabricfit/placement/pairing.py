"""The partner of a disaggregated deployment: where its pods are, and the KV-cache transfer
between its replicas and this job's (pure).

Theory of operation
-------------------
A prefill and a decode TrainingTopology name each other (``serving.pairedWith``); whichever is
planned second reads the first's recorded plan — the node of each of its pods — and prices the
KV-cache transfer between the two (:mod:`fabricfit.cost.serving`). A :class:`Partner` is that
record in frozen form, with the partner's layout (parallelism, GPUs per pod, rank order) so its
replicas can be found. Its pods' GPUs are known when fabricfit planned both offline; otherwise
the m-th partner pod on a node takes the node's m-th ``gpusPerPod`` window, the convention
:func:`fabricfit.placement.quality.plan_slots` applies to any recorded plan.

The transfer pairs the *KV units* of the two sides: the ranks of one data-parallel serving rank
(the tensor and pipeline split of one replica; with expert parallelism, each expert rank of a
replica is its own attention instance). The prefill side sends; :func:`kv_transfer` locates
every shard pair on the slots [this job's ranks..., the partner's ranks...].
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.api.serving import ServingSpec
from fabricfit.cost.serving import KvTransfer, kv_shard_pairs, shard_bytes
from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot
from fabricfit.placement.layout import Groups, RankLayout, build_layout, groups_over

#: The rank digits that vary inside one KV unit (one data-parallel serving rank).
KV_UNIT_DIGITS = ("tp", "cp", "pp")
#: The rank digits that vary inside one replica (ranks that talk every token).
REPLICA_DIGITS = ("tp", "cp", "ep", "pp")


@dataclass(frozen=True, slots=True)
class Partner:
    """The other side of a disaggregated deployment, as its plan records it: ``pods[k]`` is
    the node of its pod k, ``gpus[k]`` that pod's GPUs when known (else empty)."""

    name: str
    parallelism: Parallelism
    gpus_per_pod: int
    rank_order: str
    pods: tuple[str, ...]
    gpus: tuple[tuple[int, ...], ...] = ()

    @property
    def layout(self) -> RankLayout:
        return build_layout(self.parallelism, self.gpus_per_pod, self.rank_order)


def kv_units(layout: RankLayout) -> Groups:
    """The KV units of a job (module docstring), in rank order."""
    return groups_over(layout, KV_UNIT_DIGITS)


def replicas(layout: RankLayout) -> Groups:
    """The replicas of a served job: ranks that communicate every token, in rank order."""
    return groups_over(layout, REPLICA_DIGITS)


def replica_pods(layout: RankLayout) -> tuple[tuple[int, ...], ...]:
    """The pods of each replica, in rank order."""
    g = layout.gpus_per_pod
    return tuple(tuple(dict.fromkeys(rank // g for rank in group)) for group in replicas(layout))


def partner_slots(snapshot: ClusterSnapshot, partner: Partner) -> tuple[GpuSlot, ...] | None:
    """Where every rank of the partner sits (None when a node of its plan is gone)."""
    g = partner.gpus_per_pod
    taken: Counter[str] = Counter()
    out: list[GpuSlot] = []
    for index, name in enumerate(partner.pods):
        if not snapshot.has_node(name):
            return None
        if index < len(partner.gpus) and len(partner.gpus[index]) == g:
            gpus: Sequence[int] = partner.gpus[index]
        else:
            width = max(snapshot.node(name).gpus, g)
            start = taken[name] * g
            gpus = [(start + j) % width for j in range(g)]
        taken[name] += 1
        out.extend(snapshot.slot(name, gpu) for gpu in gpus)
    return tuple(out)


def kv_transfer(
    layout: RankLayout,
    model: ModelShape,
    serving: ServingSpec,
    partner: Partner,
) -> KvTransfer | None:
    """The shard pairs between this job (ranks 0..W-1) and its partner (ranks W...), prefill
    side sending; None for a replica, or a partner whose plan does not fit its layout."""
    if serving.role == "replica":
        return None
    other = partner.layout
    if len(partner.pods) != other.pods:
        return None
    offset = layout.world_size
    here = kv_units(layout)
    there = tuple(tuple(r + offset for r in unit) for unit in kv_units(other))
    senders, receivers = (here, there) if serving.role == "prefill" else (there, here)
    pairs = kv_shard_pairs(senders, receivers)
    if not pairs:
        return None
    size = shard_bytes(model, serving, len(here[0]), len(there[0]))
    return KvTransfer(tuple(pairs), size)
