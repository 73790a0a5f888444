"""Label schemes: map a node's labels onto fabricfit's tiers (pure).

Theory of operation
-------------------
A scheme is a reader ``labels -> Reading`` plus the keys that reveal it. ``auto`` picks, once
per cluster and from the keys any node carries, at most one *provider* scheme by fixed
precedence (:data:`PROVIDER_PRECEDENCE`, each scheme's ``precedence``), and puts ``native`` on
top of it when any node carries native tier keys: per node and per level the native label wins
and the provider fills the rest. Topograph outranks the cloud schemes because a cluster only
carries its labels when someone installed it to describe the fabric; the clouds are mutually
exclusive in practice and ordered by how much they describe; ``gfd`` (NVLink only) comes last.

Providers publish a switch hierarchy under their own keys and with their own direction (EKS
counts layers from the top, OCI names latency bands); each reader lists its switch levels
finest first and lets :func:`~fabricfit.fabric.schemes.base.chain_from_finest` map the leaf
level to the rail group, the next to the spine and the rest into the spine path. The NVLink
domain comes from the provider's own label when it has one, else from ``nvidia.com/gpu.clique``.

The registry is this package: every module but ``base`` holds one scheme as ``SCHEME`` and is
found by :func:`_discover`, so a new scheme is one module (and its tests).

Mapping onto fabricfit's tiers (every level optional; the clique fallback is
``nvidia.com/gpu.clique``: rack = ClusterUUID, NVLink domain = the whole value):

=========  ======================  =====================  ==================  =====================
scheme     spine (path)            rail group             rack                NVLink domain
=========  ======================  =====================  ==================  =====================
native     ``spine``               ``rail-group``         ``rack``            ``nvlink-domain``
topograph  tier-N…/tier-1          tier-0 (leaf, block)   ``sub-domain``      ``domain`` / clique
gfd        –                       –                      ClusterUUID         clique
gke        gce-topology-block      gce-topology-subblock  (clique)            clique / A4X subblock
eks        layer-1/…/next-finest   finest layer (3 or 4)  (clique)            ultraserver-id /
                                                                              clique / P6e block
oke        hpc_island/network_blk  local_block            host.rack_id        gpu_memory_fabric_id
coreweave  fabric/superpod         leafgroup              node…/rack          nvlink.domain / clique
=========  ======================  =====================  ==================  =====================

Details and reasons live in each scheme's module.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabricfit.fabric.schemes.base import LabelScheme, RawTiers, Reading
from fabricfit.fabric.schemes.native import NATIVE


def _discover() -> Mapping[str, LabelScheme]:
    """Every module's ``SCHEME``: the overlay first, then providers by precedence."""
    found: list[LabelScheme] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        scheme = getattr(importlib.import_module(f"{__name__}.{info.name}"), "SCHEME", None)
        if isinstance(scheme, LabelScheme):
            found.append(scheme)
    found.sort(key=lambda s: (s.precedence is not None, s.precedence or 0, s.name))
    return MappingProxyType({s.name: s for s in found})


SCHEMES: Mapping[str, LabelScheme] = _discover()
PROVIDER_PRECEDENCE = tuple(n for n, s in SCHEMES.items() if s.precedence is not None)
AUTO = "auto"
#: Every name a spec, a flag or the chart may give: ``auto`` and each scheme's.
NAMES: tuple[str, ...] = (AUTO, *SCHEMES)


@dataclass(frozen=True, slots=True)
class Resolution:
    """The schemes a cluster is read with: ``native`` overlay (optional) and one provider."""

    name: str
    native: bool
    provider: LabelScheme | None


@dataclass(frozen=True, slots=True)
class NodeReading:
    """A node's merged tiers, plus the provider's own tiers when native overrode some of them."""

    tiers: RawTiers
    problems: tuple[str, ...]
    native: RawTiers | None = None
    provider: RawTiers | None = None


def detect(label_sets: Iterable[Mapping[str, str]]) -> Resolution:
    """The ``auto`` choice for a cluster whose nodes carry ``label_sets`` (order-independent).

    A scheme is present when some node carries one of its keys, i.e. when the union of every
    node's keys holds one: one pass over the keys of the whole cluster, whatever its size."""
    keys: set[str] = set().union(*label_sets)
    present = {name for name, s in SCHEMES.items() if s.matches(keys)}
    provider = next((SCHEMES[n] for n in PROVIDER_PRECEDENCE if n in present), None)
    native = "native" in present
    name = "native" if native or provider is None else provider.name
    return Resolution(name=name, native=native, provider=provider)


def resolve(scheme: str, label_sets: Iterable[Mapping[str, str]]) -> Resolution:
    """Resolution for an explicit scheme name; ``auto`` (and unknown names) detect."""
    if scheme == "native":
        return Resolution(name="native", native=True, provider=None)
    if scheme in SCHEMES:
        return Resolution(name=scheme, native=False, provider=SCHEMES[scheme])
    return detect(label_sets)


def read_node(resolution: Resolution, labels: Mapping[str, str]) -> NodeReading:
    """One node's tiers under ``resolution``."""
    native = NATIVE.read(labels) if resolution.native else None
    provider = resolution.provider.read(labels) if resolution.provider else None
    if native is None or provider is None:
        only = native or provider or Reading()
        return NodeReading(tiers=only.tiers, problems=only.problems)
    merged = RawTiers(
        spine=_first(native.tiers.spine, provider.tiers.spine),
        rail_group=_first(native.tiers.rail_group, provider.tiers.rail_group),
        rack=_first(native.tiers.rack, provider.tiers.rack),
        nvlink_domain=_first(native.tiers.nvlink_domain, provider.tiers.nvlink_domain),
    )
    return NodeReading(
        tiers=merged,
        problems=native.problems + provider.problems,
        native=native.tiers,
        provider=provider.tiers,
    )


def _first(preferred: str | None, fallback: str | None) -> str | None:
    return preferred if preferred is not None else fallback


__all__ = [
    "AUTO",
    "NAMES",
    "PROVIDER_PRECEDENCE",
    "SCHEMES",
    "LabelScheme",
    "NodeReading",
    "RawTiers",
    "Reading",
    "Resolution",
    "detect",
    "read_node",
    "resolve",
]
