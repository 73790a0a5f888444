"""The ``eks`` scheme: Amazon EKS's network topology labels.

``network-node-layer-1..4`` are counted from the top; the highest-numbered layer present (3 or
4) is the rail group, the one above it the spine. NVLink domain: ``ultraserver-id``, else the
clique, else on P6e-GB200 the ``capacity-block-id`` (there one capacity block is one
UltraServer; on other instance types a capacity block spans many unrelated NVLink islands, so it
is not used).
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

EKS_LAYERS = tuple(f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3, 4))
EKS_ULTRASERVER = "topology.k8s.aws/ultraserver-id"
EKS_CAPACITY_BLOCK = "topology.k8s.aws/capacity-block-id"


def read_eks(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    levels = levels_of(labels, EKS_LAYERS[::-1], log)
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


SCHEME = LabelScheme(
    name="eks",
    precedence=30,
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
