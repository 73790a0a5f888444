"""The ``coreweave`` scheme: CoreWeave's fabric labels.

``ib.coreweave.cloud/fabric`` ⊃ ``superpod`` (spine) ⊃ ``leafgroup`` (rail group;
``backend.coreweave.cloud/*`` on RoCE nodes, which have no superpod: there the fabric is the
spine), ``node.coreweave.cloud/rack`` → rack, ``ds.coreweave.com/nvlink.domain`` → NVLink
domain.
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
)

CW_IB = "ib.coreweave.cloud/"
CW_BACKEND = "backend.coreweave.cloud/"
CW_RACK = "node.coreweave.cloud/rack"
CW_NVLINK = "ds.coreweave.com/nvlink.domain"


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


SCHEME = LabelScheme(
    name="coreweave",
    precedence=50,
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
