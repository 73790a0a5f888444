"""The ``gke`` scheme: Google Kubernetes Engine's node topology labels.

``gce-topology-block`` → spine, ``gce-topology-subblock`` → rail group (a subblock is a rack's
worth of hosts behind the same leaves: one hop apart), ``gce-topology-host`` ignored (A3/A4 GPU
VMs own their whole host, so it would only rename the node). On A4X (GB200) one subblock is one
NVL72 domain: the subblock is the NVLink domain when the clique is missing.
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
    levels_of,
)

GKE_BLOCK = "cloud.google.com/gce-topology-block"
GKE_SUBBLOCK = "cloud.google.com/gce-topology-subblock"
GKE_HOST = "cloud.google.com/gce-topology-host"
GKE_ACCELERATOR = "cloud.google.com/gke-accelerator"


def _is_gb_nvl72(labels: Mapping[str, str]) -> bool:
    """GKE A4X / GB200-class machine, where one subblock is one NVL72 domain."""
    machine = labels.get(INSTANCE_TYPE_LABEL, "")
    accelerator = labels.get(GKE_ACCELERATOR, "")
    return machine.startswith("a4x") or any(g in accelerator for g in ("gb200", "gb300"))


def read_gke(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    spine, rail_group = chain_from_finest(levels_of(labels, (GKE_SUBBLOCK, GKE_BLOCK), log), log)
    tiers = fill_from_clique(RawTiers(spine=spine, rail_group=rail_group), labels, log)
    if tiers.nvlink_domain is None and rail_group is not None and _is_gb_nvl72(labels):
        tiers = RawTiers(spine=spine, rail_group=rail_group, nvlink_domain=rail_group)
    return log.reading(tiers)


SCHEME = LabelScheme(
    name="gke",
    precedence=20,
    read=read_gke,
    keys=frozenset({GKE_BLOCK, GKE_SUBBLOCK, GKE_HOST}),
    tier_keys={
        "spine": (GKE_BLOCK,),
        "rail_group": (GKE_SUBBLOCK,),
        "nvlink_domain": (GPU_CLIQUE_LABEL,),
    },
)
