"""From raw tiers to qualified :class:`FabricPlace` ids, and the checks that need many nodes.

Theory of operation
-------------------
Label values are unique only within their parent level (GKE subblock "a" exists in every
block), so every id is the "/"-joined path of its ancestors and itself: rail group
``spine/rg``, rack ``spine/rg/rack``. Label values cannot contain "/" or ":", so paths never
collide across different parents, and the default NVLink domain ``node:<name>`` (the node alone)
never collides with a labelled one.

The NVLink domain is qualified by the rail group (or spine), not by the rack: a GB200 NVL36x2
domain legitimately spans two racks, but a domain that spans two rail groups contradicts the
fabric model (the same GPUs cannot hang off two leaf sets). Qualifying splits such a domain per
rail group, which under-promises NVLink rather than over-promising it, and
:func:`check_domain_spans` reports it. :func:`check_overlay` reports where native labels and the
provider's labels partition the cluster differently (a relabel gone half-way, or a typo).
"""

from __future__ import annotations

from collections.abc import Mapping

from fabricfit.fabric.schemes import NodeReading, RawTiers
from fabricfit.fabric.topology import NO_SPINE, Diagnostic, FabricPlace

LEVELS = ("spine", "rail_group", "rack", "nvlink_domain")
DEFAULT_DOMAIN_PREFIX = "node:"


def qualify(tiers: RawTiers, node: str) -> FabricPlace:
    """The node's place with every id qualified by its parents."""
    spine = tiers.spine or NO_SPINE
    rail_group = _join(spine, tiers.rail_group)
    parent = rail_group if rail_group is not None else spine
    domain = _join(parent, tiers.nvlink_domain)
    return FabricPlace(
        spine=spine,
        rail_group=rail_group,
        rack=_join(parent, tiers.rack),
        nvlink_domain=domain if domain is not None else DEFAULT_DOMAIN_PREFIX + node,
    )


def _join(parent: str, value: str | None) -> str | None:
    if value is None:
        return None
    return f"{parent}/{value}" if parent else value


def check_domain_spans(
    readings: Mapping[str, NodeReading], places: Mapping[str, FabricPlace]
) -> list[Diagnostic]:
    """One diagnostic per labelled NVLink domain whose nodes sit in different rail groups."""
    groups: dict[tuple[str, str], dict[str | None, str]] = {}
    for name in sorted(readings):
        domain = readings[name].tiers.nvlink_domain
        if domain is None:
            continue
        place = places[name]
        groups.setdefault((place.spine, domain), {}).setdefault(place.rail_group, name)
    found: list[Diagnostic] = []
    for (_, domain), rail_groups in sorted(groups.items()):
        if len(rail_groups) > 1:
            names = ", ".join(sorted(rg or "(none)" for rg in rail_groups))
            found.append(
                Diagnostic(
                    node=min(rail_groups.values()),
                    message=f"NVLink domain {domain!r} spans rail groups {names}; "
                    "treated as one NVLink domain per rail group",
                )
            )
    return found


def check_overlay(readings: Mapping[str, NodeReading], provider: str) -> list[Diagnostic]:
    """Diagnostics where native labels and ``provider`` labels group nodes differently.

    Names may differ freely (``su1`` vs ``leaf-a``); what must agree is the grouping: per level,
    native ids and provider ids must correspond one to one over the nodes that carry both.
    """
    found: list[Diagnostic] = []
    for level in LEVELS:
        native_to_provider: dict[str, dict[str, str]] = {}
        provider_to_native: dict[str, dict[str, str]] = {}
        for name in sorted(readings):
            pair = _level_pair(readings[name], level, name)
            if pair is not None:
                native_to_provider.setdefault(pair[0], {}).setdefault(pair[1], name)
                provider_to_native.setdefault(pair[1], {}).setdefault(pair[0], name)
        label = level.replace("_", " ")
        for native_id, seen in sorted(native_to_provider.items()):
            if len(seen) > 1:
                message = f"native {label} {native_id!r} spans {provider} {label}s {sorted(seen)}"
                found.append(Diagnostic(min(seen.values()), message + "; native labels win"))
        for provider_id, seen in sorted(provider_to_native.items()):
            if len(seen) > 1:
                message = f"native labels split {provider} {label} {provider_id!r} into"
                message += f" {sorted(seen)}"
                found.append(Diagnostic(min(seen.values()), message + "; native labels win"))
    return found


def _level_pair(reading: NodeReading, level: str, name: str) -> tuple[str, str] | None:
    native, provider = reading.native, reading.provider
    if native is None or provider is None:
        return None
    if getattr(native, level) is None or getattr(provider, level) is None:
        return None
    native_id = getattr(qualify(native, name), level)
    provider_id = getattr(qualify(provider, name), level)
    return str(native_id), str(provider_id)
