"""What fabricfit detected in a cluster: tiers, their domains, the labels read (pure).

Theory of operation
-------------------
A plan is only as good as the tiers the label scheme finds. Nodes without topology labels (or a
cluster read with the wrong ``labelScheme``) look like one flat fabric: every plan then prices
as the best case and reports 100% efficiency, silently. :func:`detect_tiers` says what was
found, from a :class:`ClusterSnapshot`: per tier (spine, rail group, rack, NVLink domain) the
domains with their node count and free GPUs, which label keys carried the tier, and the nodes
that carry no tier at all. A node "carries" a tier when its labels named it: the snapshot's
qualified places tell (no spine is ``""``, no rail group or rack is ``None``, and an unlabelled
NVLink domain is the node alone, ``node:<name>``).

``fabricfit inspect`` prints this; the operator turns "no tier at all" into
``TopologyDetected=False`` (reason ``NoTopologyLabels``) and counts the unlabelled nodes that
have GPUs in ``fabricfit_nodes_without_topology`` (CPU-only nodes need no tier); a plan made
without any tier reports its efficiency as unknown (:func:`flat_warning`: ``fabricfit plan``
and the ``Planned`` condition say why).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fabricfit.fabric.places import DEFAULT_DOMAIN_PREFIX
from fabricfit.fabric.schemes import SCHEMES, resolve
from fabricfit.fabric.topology import NO_SPINE, ClusterSnapshot, FabricPlace, NodeInfo

TIERS = ("spine", "rail_group", "rack", "nvlink_domain")


@dataclass(frozen=True, slots=True)
class Domain:
    """One domain of a tier: its qualified id, nodes, GPUs and free GPUs (on available
    nodes, after the pods given)."""

    id: str
    nodes: int
    gpus: int
    free_gpus: int


@dataclass(frozen=True, slots=True)
class TierReport:
    """A tier some node carries: the label keys read for it and its domains (sorted by id)."""

    tier: str
    label_keys: tuple[str, ...]
    domains: tuple[Domain, ...]


@dataclass(frozen=True, slots=True)
class Detection:
    """What the scheme found in the cluster."""

    scheme: str
    tiers: tuple[TierReport, ...]
    nodes: int
    gpus: int
    free_gpus: int
    unlabelled: tuple[str, ...]  # nodes that carry no tier at all
    # of those, the nodes with GPUs (allocatable or DRA): the ones a plan could use
    unlabelled_gpu_nodes: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        """Whether any tier was found (a flat cluster otherwise)."""
        return bool(self.tiers)


def labelled_tiers(place: FabricPlace) -> tuple[str, ...]:
    """The tiers a node's labels named, from its qualified place."""
    named = {
        "spine": place.spine != NO_SPINE,
        "rail_group": place.rail_group is not None,
        "rack": place.rack is not None,
        "nvlink_domain": not place.nvlink_domain.startswith(DEFAULT_DOMAIN_PREFIX),
    }
    return tuple(t for t in TIERS if named[t])


def domain_of(place: FabricPlace, tier: str) -> str:
    value: str | None = getattr(place, tier)
    return value or ""


def tier_label_keys(
    scheme: str, label_sets: Iterable[Mapping[str, str]]
) -> dict[str, tuple[str, ...]]:
    """Per tier, the label keys the resolved scheme(s) read that some node carries."""
    labels = list(label_sets)
    resolution = resolve(scheme, labels)
    schemes = ([SCHEMES["native"]] if resolution.native else []) + (
        [resolution.provider] if resolution.provider else []
    )
    present = {key for node in labels for key in node}
    keys: dict[str, tuple[str, ...]] = {}
    for tier in TIERS:
        found = [k for s in schemes for k in s.tier_keys.get(tier, ()) if k in present]
        keys[tier] = tuple(dict.fromkeys(found))
    return keys


def detect_tiers(snapshot: ClusterSnapshot, scheme: str | None = None) -> Detection:
    """What ``snapshot`` (read with ``scheme``, default its own) shows of the fabric."""
    members: dict[str, dict[str, list[tuple[int, int]]]] = {t: {} for t in TIERS}
    unlabelled, unlabelled_gpu = [], []
    for node in snapshot.nodes:
        tiers = labelled_tiers(node.place)
        if not tiers:
            unlabelled.append(node.name)
            if node.gpus > 0:
                unlabelled_gpu.append(node.name)
        for tier in tiers:
            domain = domain_of(node.place, tier)
            members[tier].setdefault(domain, []).append((node.gpus, _free(node)))
    keys = tier_label_keys(scheme or snapshot.scheme, [n.labels for n in snapshot.nodes])
    reports = tuple(
        TierReport(
            tier=tier,
            label_keys=keys[tier],
            domains=tuple(
                Domain(
                    id=domain,
                    nodes=len(nodes),
                    gpus=sum(g for g, _ in nodes),
                    free_gpus=sum(f for _, f in nodes),
                )
                for domain, nodes in sorted(members[tier].items())
            ),
        )
        for tier in TIERS
        if members[tier]
    )
    return Detection(
        scheme=snapshot.scheme,
        tiers=reports,
        nodes=len(snapshot.nodes),
        gpus=sum(n.gpus for n in snapshot.nodes),
        free_gpus=sum(_free(n) for n in snapshot.nodes),
        unlabelled=tuple(unlabelled),
        unlabelled_gpu_nodes=tuple(unlabelled_gpu),
    )


def _free(node: NodeInfo) -> int:
    """Free GPUs a plan could use: none on a NotReady or cordoned node."""
    return node.free_gpus if node.available else 0


def describe(detection: Detection) -> str:
    """One line: the scheme and each tier with its number of domains."""
    if not detection.found:
        return (
            f"label scheme {detection.scheme} finds no topology tier on any of the "
            f"{detection.nodes} nodes: plans treat the fabric as flat"
        )
    tiers = ", ".join(f"{t.tier} ({count_of(len(t.domains), 'domain')})" for t in detection.tiers)
    missing = len(detection.unlabelled)
    tail = f"; {missing} of {detection.nodes} nodes carry no topology label" if missing else ""
    return f"label scheme {detection.scheme}: {tiers}{tail}"


def flat_warning(detection: Detection) -> str | None:
    """What a plan must say when no tier was found (None when one was): every placement then
    looks optimal, so its efficiency is unknown rather than 100%."""
    if detection.found:
        return None
    return (
        f"{describe(detection)}, so the efficiency is unknown (every placement looks optimal); "
        "label the nodes or choose the label scheme they carry (fabricfit inspect)"
    )


def count_of(n: int, noun: str) -> str:
    """``1 domain``, ``2 domains``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
