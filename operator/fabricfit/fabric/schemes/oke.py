"""The ``oke`` scheme: Oracle OKE's RDMA topology labels.

``rdma.hpc_island_id`` ⊃ ``rdma.network_block_id`` (spine) ⊃ ``rdma.local_block_id`` (rail
group, OCI's "first latency band"); ``host.rack_id`` → rack; ``host.gpu_memory_fabric_id`` →
NVLink domain.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabricfit.fabric.schemes.base import (
    GPU_CLIQUE_LABEL,
    LabelScheme,
    ProblemLog,
    RawTiers,
    Reading,
    chain_from_finest,
    fill_from_clique,
    levels_of,
)

OKE_ISLAND = "oci.oraclecloud.com/rdma.hpc_island_id"
OKE_NETWORK_BLOCK = "oci.oraclecloud.com/rdma.network_block_id"
OKE_LOCAL_BLOCK = "oci.oraclecloud.com/rdma.local_block_id"
OKE_RACK = "oci.oraclecloud.com/host.rack_id"
OKE_MEMORY_FABRIC = "oci.oraclecloud.com/host.gpu_memory_fabric_id"


def read_oke(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    keys = (OKE_LOCAL_BLOCK, OKE_NETWORK_BLOCK, OKE_ISLAND)
    spine, rail_group = chain_from_finest(levels_of(labels, keys, log), log)
    tiers = RawTiers(
        spine=spine,
        rail_group=rail_group,
        rack=log.value(labels, OKE_RACK),
        nvlink_domain=log.value(labels, OKE_MEMORY_FABRIC),
    )
    return log.reading(fill_from_clique(tiers, labels, log))


SCHEME = LabelScheme(
    name="oke",
    precedence=40,
    read=read_oke,
    keys=frozenset({OKE_ISLAND, OKE_NETWORK_BLOCK, OKE_LOCAL_BLOCK, OKE_MEMORY_FABRIC}),
    tier_keys={
        "spine": (OKE_NETWORK_BLOCK,),
        "rail_group": (OKE_LOCAL_BLOCK,),
        "rack": (OKE_RACK,),
        "nvlink_domain": (OKE_MEMORY_FABRIC, GPU_CLIQUE_LABEL),
    },
)
