"""The ``topograph`` scheme: NVIDIA topograph's node labels, all three key generations.

Theory of operation
-------------------
Topograph renamed its keys twice, and clusters upgraded in place carry stale keys next to new
ones, so each generation is normalised to the same shape (switch levels finest first, plus the
accelerator domain) and the newest generation present wins:

=========  ==========================================  ==============================
gen        switch levels, finest first                 NVLink domain
=========  ==========================================  ==============================
≥ v1.0     ``fabric.topograph.run/tier-0, tier-1, …``  ``accelerator.topograph.run/domain``
v0.3–0.5   ``network.topology.nvidia.com/leaf, spine,  ``network.topology.nvidia.com/
           core``                                      accelerator``
≤ v0.1     ``…/block, spine, datacenter``              same
=========  ==========================================  ==============================

tier-0 (leaf/block) is the rail group, tier-1 the spine, higher tiers fold into the spine path.
``accelerator.topograph.run/sub-domain`` (e.g. ``nvl1.rack01``, a rack inside a multi-rack
NVLink domain) becomes the rack. Older generations that disagree with the chosen one are
reported, because a half-finished relabel silently mixing two topologies is worse than either.
Topograph ≥ v1.0 sets no accelerator domain unless configured to, so as in every provider
scheme ``nvidia.com/gpu.clique`` fills the NVLink domain (and rack) when topograph names none.
"""

from __future__ import annotations

import re
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

V1_TIER_PREFIX = "fabric.topograph.run/"
V1_DOMAIN = "accelerator.topograph.run/domain"
V1_SUB_DOMAIN = "accelerator.topograph.run/sub-domain"
LEGACY_PREFIX = "network.topology.nvidia.com/"
LEGACY_ACCELERATOR = LEGACY_PREFIX + "accelerator"
V05_LEVELS = ("leaf", "spine", "core")
V01_LEVELS = ("block", "spine", "datacenter")

# Canonical tier numbers only: "tier-01" would otherwise alias "tier-1".
_TIER_KEY = re.compile(r"^tier-(0|[1-9][0-9]{0,2})$")


def _v1_levels(labels: Mapping[str, str]) -> list[tuple[str, str | None]]:
    numbers: dict[int, str] = {}
    for key, value in labels.items():
        if key.startswith(V1_TIER_PREFIX):
            match = _TIER_KEY.match(key.removeprefix(V1_TIER_PREFIX))
            if match:
                numbers[int(match.group(1))] = value
    if not numbers:
        return []
    return [(f"tier-{n}", numbers.get(n)) for n in range(max(numbers) + 1)]


def _read_generation(
    labels: Mapping[str, str], levels: list[tuple[str, str]], domain_key: str, log: ProblemLog
) -> RawTiers:
    """Tiers from one generation; ``levels`` holds (display name, label key) finest first."""
    values = [(name, log.value(labels, key)) for name, key in levels]
    spine, rail_group = chain_from_finest(values, log)
    return RawTiers(spine=spine, rail_group=rail_group, nvlink_domain=log.value(labels, domain_key))


def _generations(labels: Mapping[str, str], log: ProblemLog) -> list[tuple[str, RawTiers]]:
    """Every generation the node carries, newest first."""
    found: list[tuple[str, RawTiers]] = []
    v1 = _v1_levels(labels)
    if v1 or V1_DOMAIN in labels:
        keys = [(name, V1_TIER_PREFIX + name) for name, _ in v1]
        found.append(("v1", _read_generation(labels, keys, V1_DOMAIN, log)))
    has_v05 = any(LEGACY_PREFIX + k in labels for k in ("leaf", "core"))
    has_v01 = any(LEGACY_PREFIX + k in labels for k in ("block", "datacenter"))
    shared = any(LEGACY_PREFIX + k in labels for k in ("spine", "accelerator"))
    # spine/accelerator exist in both legacy generations; they mean the same thing in each.
    for gen, names, present in (
        ("v0.5", V05_LEVELS, has_v05 or (shared and not has_v01)),
        ("v0.1", V01_LEVELS, has_v01),
    ):
        if present:
            keys = [(LEGACY_PREFIX + n, LEGACY_PREFIX + n) for n in names]
            found.append((gen, _read_generation(labels, keys, LEGACY_ACCELERATOR, log)))
    return found


def read_topograph(labels: Mapping[str, str]) -> Reading:
    log = ProblemLog()
    generations = _generations(labels, log)
    if not generations:
        return log.reading(RawTiers())
    newest_name, newest = generations[0]
    for name, other in generations[1:]:
        if other != newest:
            log.problems.append(
                f"topograph {name} labels ({_describe(other)}) disagree with {newest_name} "
                f"labels ({_describe(newest)}); using {newest_name}"
            )
    rack = None
    sub_domain = log.value(labels, V1_SUB_DOMAIN)
    if sub_domain is not None and newest.nvlink_domain is None:
        log.problems.append(f"{V1_SUB_DOMAIN} is set without a domain; ignored")
    elif sub_domain is not None:
        rack = sub_domain
    tiers = RawTiers(
        spine=newest.spine,
        rail_group=newest.rail_group,
        rack=rack,
        nvlink_domain=newest.nvlink_domain,
    )
    return log.reading(fill_from_clique(tiers, labels, log))


def _describe(tiers: RawTiers) -> str:
    return (
        f"spine={tiers.spine or '-'}, leaf={tiers.rail_group or '-'}, "
        f"domain={tiers.nvlink_domain or '-'}"
    )


SCHEME = LabelScheme(
    name="topograph",
    precedence=10,
    read=read_topograph,
    keys=frozenset({V1_DOMAIN, V1_SUB_DOMAIN}),
    prefixes=(V1_TIER_PREFIX, LEGACY_PREFIX),
    tier_keys={
        "spine": (V1_TIER_PREFIX + "tier-1", LEGACY_PREFIX + "spine"),
        "rail_group": (V1_TIER_PREFIX + "tier-0", LEGACY_PREFIX + "leaf", LEGACY_PREFIX + "block"),
        "rack": (V1_SUB_DOMAIN,),
        "nvlink_domain": (V1_DOMAIN, LEGACY_ACCELERATOR, GPU_CLIQUE_LABEL),
    },
)
