"""The ``gfd`` scheme: GPU Feature Discovery's ``nvidia.com/gpu.clique``.

rack = the ClusterUUID (the physical NVL rack), NVLink domain = the whole value (the partition).
It says nothing about the switch fabric, so every inter-node hop counts as crossing the spine.
Last in ``auto``'s precedence: any provider scheme describes more.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabricfit.fabric.schemes.base import (
    GPU_CLIQUE_LABEL,
    LabelScheme,
    ProblemLog,
    RawTiers,
    Reading,
    clique_domain,
)


def read_gfd(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    rack, domain = clique_domain(labels, log)
    return log.reading(RawTiers(rack=rack, nvlink_domain=domain))


SCHEME = LabelScheme(
    name="gfd",
    precedence=90,
    read=read_gfd,
    keys=frozenset({GPU_CLIQUE_LABEL}),
    tier_keys={"nvlink_domain": (GPU_CLIQUE_LABEL,)},
)
