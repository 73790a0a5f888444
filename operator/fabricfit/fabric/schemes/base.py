"""What every label scheme produces: the *raw* tiers of one node, before qualification.

Theory of operation
-------------------
A scheme reader looks only at one node's labels and answers "which spine, rail group, rack and
NVLink domain does this node name?" with the label values as they are (unqualified). Providers
describe their switch hierarchy as an ordered list of levels; :func:`chain_from_finest` turns
that list (finest first, by position) into the two tiers fabricfit models: the leaf level is the
rail group (the set of leaves one hop apart), the next one the spine, and every level above the
spine is folded into the spine's path so that equal spine names under different cores stay
different. Readers never raise: a bad value becomes a problem string and the level is absent.
Qualification by parent levels happens later, in :mod:`fabricfit.fabric.places`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fabricfit.fabric.objects import shorten

# Kubernetes label values: at most 63 characters, alphanumerics at both ends, [-_.] inside.
# They can never contain "/" or ":", which is what makes qualified ids unambiguous.
_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")

GPU_CLIQUE_LABEL = "nvidia.com/gpu.clique"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


@dataclass(frozen=True, slots=True)
class RawTiers:
    """One node's tiers as its labels name them; ``spine`` is a "/"-joined path, coarse first."""

    spine: str | None = None
    rail_group: str | None = None
    rack: str | None = None
    nvlink_domain: str | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """A scheme's answer for one node: tiers plus human-readable problems found on the way."""

    tiers: RawTiers = RawTiers()
    problems: tuple[str, ...] = ()


#: Per tier (``spine``, ``rail_group``, ``rack``, ``nvlink_domain``), the node label keys that
#: may carry it, best first.
TierKeys = Mapping[str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class LabelScheme:
    """A named reader. ``keys``/``prefixes`` are what auto-detection looks for on nodes;
    ``tier_keys`` names the label key of each tier, which is what a Kueue ``Topology`` level
    (and a pod affinity's ``topologyKey``) must use for that tier. ``precedence`` orders the
    provider schemes for ``auto`` (lowest first); None marks the overlay (``native``), which
    ``auto`` lays over whichever provider it picks."""

    name: str
    read: Callable[[Mapping[str, str]], Reading]
    precedence: int | None = None
    keys: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()
    tier_keys: TierKeys = field(default_factory=dict)

    def matches(self, labels: Iterable[str]) -> bool:
        """True when the node carries at least one key this scheme reads (``labels``: a
        node's labels or any collection of label keys)."""
        return any(key in self.keys or key.startswith(self.prefixes) for key in labels)


@dataclass
class ProblemLog:
    """Mutable collector used while one reader runs; frozen into ``Reading.problems``."""

    problems: list[str] = field(default_factory=list)

    def value(self, labels: Mapping[str, str], key: str) -> str | None:
        """The label's value when present and legal; empty counts as absent (k8s allows it)."""
        raw = labels.get(key)
        if raw is None or raw == "":
            return None
        if not is_label_value(raw):
            self.problems.append(
                f"label {shorten(key)}={shorten(raw)} is not a valid label value; ignored"
            )
            return None
        return raw

    def reading(self, tiers: RawTiers) -> Reading:
        # Readers may look at a shared key twice (topograph generations); report it once.
        return Reading(tiers=tiers, problems=tuple(dict.fromkeys(self.problems)))


def is_label_value(value: object) -> bool:
    """Whether ``value`` may be used as (part of) a tier id."""
    return isinstance(value, str) and _LABEL_VALUE.match(value) is not None


def levels_of(
    labels: Mapping[str, str], keys: Sequence[str], log: ProblemLog
) -> list[tuple[str, str | None]]:
    """(key, value or None) for each of ``keys``, in their order (for :func:`chain_from_finest`)."""
    return [(key, log.value(labels, key)) for key in keys]


def chain_from_finest(
    levels: Sequence[tuple[str, str | None]], log: ProblemLog
) -> tuple[str | None, str | None]:
    """(spine path, rail group) from switch levels ordered finest first.

    ``levels[0]`` is the leaf level (the rail group), ``levels[1]`` the spine and the rest sit
    above it. Positions are kept even when a level is missing: a node without a leaf label has
    no rail group rather than its spine promoted to one, which would promise one-hop paths that
    do not exist. A missing level between present ones (tier-1 absent under tier-2) leaves us
    unable to name the spine, so the levels above the gap are reported and ignored.
    """
    if not levels:
        return None, None
    run: list[str] = []
    for _key, value in levels[1:]:
        if value is None:
            break
        run.append(value)
    above_gap = levels[1 + len(run) :]
    skipped = [key for key, value in above_gap if value is not None]
    if skipped:
        log.problems.append(
            f"switch tier {above_gap[0][0]} is missing below {', '.join(skipped)}; "
            "ignoring the tiers above the gap"
        )
    return "/".join(reversed(run)) or None, levels[0][1]


def clique_domain(labels: Mapping[str, str], log: ProblemLog) -> tuple[str | None, str | None]:
    """(rack, NVLink domain) from GFD's ``nvidia.com/gpu.clique`` = ``<ClusterUUID>.<CliqueID>``.

    The whole value is the NVLink *partition* (Fabric Manager isolates partitions from each
    other, so only GPUs of one clique can talk over NVLink); the ClusterUUID is the physical
    NVL rack, which may be cut into several partitions. Hence rack = ClusterUUID ⊇ domain.
    """
    clique = log.value(labels, GPU_CLIQUE_LABEL)
    if clique is None:
        return None, None
    cluster_uuid, dot, clique_id = clique.rpartition(".")
    if not dot or not cluster_uuid or not clique_id:
        log.problems.append(
            f"label {GPU_CLIQUE_LABEL}={shorten(clique)} is not <ClusterUUID>.<CliqueID>; "
            "using it as the NVLink domain without a rack"
        )
        return None, clique
    return cluster_uuid, clique


def fill_from_clique(tiers: RawTiers, labels: Mapping[str, str], log: ProblemLog) -> RawTiers:
    """``tiers`` with the NVLink domain (and rack) taken from ``gpu.clique`` when unset.

    Provider network labels rarely describe NVLink, while the clique is hardware truth reported
    by Fabric Manager, so provider schemes use it as their NVLink-domain fallback.
    """
    if tiers.nvlink_domain is not None:
        return tiers
    rack, domain = clique_domain(labels, log)
    if domain is None:
        return tiers
    return RawTiers(
        spine=tiers.spine,
        rail_group=tiers.rail_group,
        rack=tiers.rack if tiers.rack is not None else rack,
        nvlink_domain=domain,
    )
