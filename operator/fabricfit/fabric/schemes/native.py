"""The ``native`` scheme: fabricfit's own labels (``topology.fabricfit.dev/*``).

Theory of operation
-------------------
Native labels name fabricfit's tiers directly, so reading them is a lookup per level. They are
explicit operator intent: nothing else (not even ``gpu.clique``) is consulted, and an absent
level keeps its documented default. ``rails`` and ``fabric`` are node properties, not tiers;
the snapshot builder reads them for every scheme. ``native`` has no precedence: ``auto`` lays it
over the provider scheme it picks, label by label.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabricfit.api.constants import (
    LABEL_FABRIC,
    LABEL_NVLINK_DOMAIN,
    LABEL_PREFIX,
    LABEL_RACK,
    LABEL_RAIL_GROUP,
    LABEL_RAILS,
    LABEL_SPINE,
)
from fabricfit.fabric.schemes.base import (
    LabelScheme,
    ProblemLog,
    RawTiers,
    Reading,
)

# Only the tier keys decide detection: a cluster labelled just with `rails` or `fabric` has not
# described its topology natively and should still get a provider scheme's tiers.
NATIVE_TIER_KEYS = frozenset({LABEL_SPINE, LABEL_RAIL_GROUP, LABEL_RACK, LABEL_NVLINK_DOMAIN})
_NATIVE_KEYS = NATIVE_TIER_KEYS | {LABEL_RAILS, LABEL_FABRIC}


def read_native(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    tiers = RawTiers(
        spine=log.value(labels, LABEL_SPINE),
        rail_group=log.value(labels, LABEL_RAIL_GROUP),
        rack=log.value(labels, LABEL_RACK),
        nvlink_domain=log.value(labels, LABEL_NVLINK_DOMAIN),
    )
    unknown = sorted(
        key for key in labels if key.startswith(LABEL_PREFIX) and key not in _NATIVE_KEYS
    )
    if unknown:
        # A typo such as `rail_group` would otherwise silently fall back to "no rail group".
        log.problems.append(f"unknown fabricfit label(s) {', '.join(unknown)}; ignored")
    return log.reading(tiers)


SCHEME = NATIVE = LabelScheme(
    name="native",
    read=read_native,
    keys=NATIVE_TIER_KEYS,
    tier_keys={
        "spine": (LABEL_SPINE,),
        "rail_group": (LABEL_RAIL_GROUP,),
        "rack": (LABEL_RACK,),
        "nvlink_domain": (LABEL_NVLINK_DOMAIN,),
    },
)
