"""Cloud provider schemes: ``gke``, ``eks``, ``oke`` and ``coreweave``.

Theory of operation
-------------------
Each provider publishes a switch hierarchy under its own keys and with its own direction
(EKS counts layers from the top, OCI names latency bands). Each reader lists its switch levels
finest first and lets :func:`chain_from_finest` map the leaf level to the rail group, the next
to the spine and the rest into the spine path. The NVLink domain comes from the provider's own
label when it has one, else from ``nvidia.com/gpu.clique``.

Mapping decisions (coarse → fine):

* GKE: ``gce-topology-block`` → spine, ``gce-topology-subblock`` → rail group (a subblock is a
  rack's worth of hosts behind the same leaves: one hop apart), ``gce-topology-host`` ignored
  (A3/A4 GPU VMs own their whole host, so it would only rename the node). On A4X (GB200) one
  subblock is one NVL72 domain: the subblock is the NVLink domain when the clique is missing.
* EKS: ``network-node-layer-1..4`` counted from the top; the highest-numbered layer present
  (3 or 4) is the rail group. NVLink domain: ``ultraserver-id``, else the clique, else on
  P6e-GB200 the ``capacity-block-id`` (there one capacity block is one UltraServer; on other
  instance types a capacity block spans many unrelated NVLink islands, so it is not used).
* OKE: ``rdma.hpc_island_id`` ⊃ ``rdma.network_block_id`` (spine) ⊃ ``rdma.local_block_id``
  (rail group, OCI's "first latency band"); ``host.rack_id`` → rack;
  ``host.gpu_memory_fabric_id`` → NVLink domain.
* CoreWeave: ``ib.coreweave.cloud/fabric`` ⊃ ``superpod`` (spine) ⊃ ``leafgroup`` (rail group;
  ``backend.coreweave.cloud/*`` on RoCE nodes, which have no superpod: there the fabric is
  the spine), ``node.coreweave.cloud/rack`` → rack,
  ``ds.coreweave.com/nvlink.domain`` → NVLink domain.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabricfit.fabric.schemes.base import (
    GPU_CLIQUE_LABEL,
    INSTANCE_TYPE_LABEL,
    LabelScheme,
    ProblemLog,
    RawTiers,
    Reading,
    chain_from_finest,
    fill_from_clique,
)

GKE_BLOCK = "cloud.google.com/gce-topology-block"
GKE_SUBBLOCK = "cloud.google.com/gce-topology-subblock"
GKE_HOST = "cloud.google.com/gce-topology-host"
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"
EKS_LAYERS = tuple(f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3, 4))
EKS_ULTRASERVER = "topology.k8s.aws/ultraserver-id"
EKS_CAPACITY_BLOCK = "topology.k8s.aws/capacity-block-id"
OKE_ISLAND = "oci.oraclecloud.com/rdma.hpc_island_id"
OKE_NETWORK_BLOCK = "oci.oraclecloud.com/rdma.network_block_id"
OKE_LOCAL_BLOCK = "oci.oraclecloud.com/rdma.local_block_id"
OKE_RACK = "oci.oraclecloud.com/host.rack_id"
OKE_MEMORY_FABRIC = "oci.oraclecloud.com/host.gpu_memory_fabric_id"
CW_IB = "ib.coreweave.cloud/"
CW_BACKEND = "backend.coreweave.cloud/"
CW_RACK = "node.coreweave.cloud/rack"
CW_NVLINK = "ds.coreweave.com/nvlink.domain"


def _levels(
    labels: Mapping[str, str], keys: tuple[str, ...], log: ProblemLog
) -> list[tuple[str, str | None]]:
    return [(key, log.value(labels, key)) for key in keys]


def _is_gb_nvl72(labels: Mapping[str, str]) -> bool:
    """GKE A4X / GB200-class machine, where one subblock is one NVL72 domain."""
    machine = labels.get(INSTANCE_TYPE_LABEL, "")
    accelerator = labels.get(GKE_ACCELERATOR, "")
    return machine.startswith("a4x") or any(g in accelerator for g in ("gb200", "gb300"))


def read_gke(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    spine, rail_group = chain_from_finest(_levels(labels, (GKE_SUBBLOCK, GKE_BLOCK), log), log)
    tiers = fill_from_clique(RawTiers(spine=spine, rail_group=rail_group), labels, log)
    if tiers.nvlink_domain is None and rail_group is not None and _is_gb_nvl72(labels):
        tiers = RawTiers(spine=spine, rail_group=rail_group, nvlink_domain=rail_group)
    return log.reading(tiers)


def read_eks(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    levels = _levels(labels, EKS_LAYERS[::-1], log)
    # Layers count from the top and only some instance types have a 4th: the finest layer
    # present is the one the node hangs off, so missing layers below it are not gaps.
    while levels and levels[0][1] is None:
        levels.pop(0)
    spine, rail_group = chain_from_finest(levels, log)
    tiers = RawTiers(
        spine=spine, rail_group=rail_group, nvlink_domain=log.value(labels, EKS_ULTRASERVER)
    )
    tiers = fill_from_clique(tiers, labels, log)
    if tiers.nvlink_domain is None and labels.get(INSTANCE_TYPE_LABEL, "").startswith("p6e-gb"):
        block = log.value(labels, EKS_CAPACITY_BLOCK)
        tiers = RawTiers(spine=spine, rail_group=rail_group, nvlink_domain=block)
    return log.reading(tiers)


def read_oke(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    keys = (OKE_LOCAL_BLOCK, OKE_NETWORK_BLOCK, OKE_ISLAND)
    spine, rail_group = chain_from_finest(_levels(labels, keys, log), log)
    tiers = RawTiers(
        spine=spine,
        rail_group=rail_group,
        rack=log.value(labels, OKE_RACK),
        nvlink_domain=log.value(labels, OKE_MEMORY_FABRIC),
    )
    return log.reading(fill_from_clique(tiers, labels, log))


def _coreweave_level(labels: Mapping[str, str], name: str, log: ProblemLog) -> str | None:
    """The InfiniBand key, else the backend key (RoCE clusters only carry the latter)."""
    ib = log.value(labels, CW_IB + name)
    return ib if ib is not None else log.value(labels, CW_BACKEND + name)


def read_coreweave(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    above = [(n, _coreweave_level(labels, n, log)) for n in ("superpod", "fabric")]
    # RoCE clusters have no superpods: there the fabric is the tier right above the leaf
    # group, so a missing superpod is not a gap.
    levels = [("leafgroup", _coreweave_level(labels, "leafgroup", log))]
    levels += [(name, value) for name, value in above if value is not None]
    spine, rail_group = chain_from_finest(levels, log)
    tiers = RawTiers(
        spine=spine,
        rail_group=rail_group,
        rack=log.value(labels, CW_RACK),
        nvlink_domain=log.value(labels, CW_NVLINK),
    )
    return log.reading(fill_from_clique(tiers, labels, log))


GKE = LabelScheme(
    name="gke",
    read=read_gke,
    keys=frozenset({GKE_BLOCK, GKE_SUBBLOCK, GKE_HOST}),
    tier_keys={
        "spine": (GKE_BLOCK,),
        "rail_group": (GKE_SUBBLOCK,),
        "nvlink_domain": (GPU_CLIQUE_LABEL,),
    },
)
EKS = LabelScheme(
    name="eks",
    read=read_eks,
    keys=frozenset({*EKS_LAYERS, EKS_ULTRASERVER}),
    # EKS numbers layers from the top; the finest layer a node carries is its rail group, and
    # the spine is the layer right above it (render.kueue.tier_label_keys fixes that up).
    tier_keys={
        "spine": EKS_LAYERS[2::-1],
        "rail_group": EKS_LAYERS[::-1],
        "nvlink_domain": (EKS_ULTRASERVER, GPU_CLIQUE_LABEL),
    },
)
OKE = LabelScheme(
    name="oke",
    read=read_oke,
    keys=frozenset({OKE_ISLAND, OKE_NETWORK_BLOCK, OKE_LOCAL_BLOCK, OKE_MEMORY_FABRIC}),
    tier_keys={
        "spine": (OKE_NETWORK_BLOCK,),
        "rail_group": (OKE_LOCAL_BLOCK,),
        "rack": (OKE_RACK,),
        "nvlink_domain": (OKE_MEMORY_FABRIC, GPU_CLIQUE_LABEL),
    },
)
COREWEAVE = LabelScheme(
    name="coreweave",
    read=read_coreweave,
    keys=frozenset({CW_RACK, CW_NVLINK}),
    prefixes=(CW_IB, CW_BACKEND),
    tier_keys={
        "spine": (CW_IB + "superpod", CW_BACKEND + "fabric"),
        "rail_group": (CW_IB + "leafgroup", CW_BACKEND + "leafgroup"),
        "rack": (CW_RACK,),
        "nvlink_domain": (CW_NVLINK, GPU_CLIQUE_LABEL),
    },
)
