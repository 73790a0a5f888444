"""Which of a plan's groups ride NVLink *between* nodes, and so need multi-node NVLink set up.

Theory of operation
-------------------
On rack-scale NVLink (GB200/GB300 NVL72: 18 compute trays of 4 GPUs, every Kubernetes node a
tray) one NVLink domain holds many nodes. The cost model prices a group whose ranks sit on
several nodes of one domain at NVLink speed, but the GPUs of two trays only talk over NVLink
once the pods share an IMEX channel (NVIDIA's DRA driver provides it through a ComputeDomain);
without one, NCCL falls back to the network between the trays, silently.

A group *spans trays* when its ranks sit on two or more nodes that all share one NVLink domain.
Any dimension counts (tensor and expert groups are the usual ones, but a data or pipeline group
the plan kept inside a rack is priced at NVLink speed too). A group whose ranks are on one node
needs nothing (intra-node NVLink), and one that crosses domains uses the network anyway.

Only GPU fabrics have NVLink: on a TPU profile (a torus) the domain label is the slice, whose
chips talk over ICI with nothing to set up, so no group spans trays there (a TPU plan asked for
an NVIDIA ComputeDomain). On a GPU fabric a domain of several nodes is multi-node NVLink, what
the cost model priced; a profile of one-node domains on rack-labelled trays counts too.

The driver's channel is one per node (device ``channel`` 0, allocated to one claim at a time),
so when the plan puts two pods of the job on one node only one of them can get it:
:attr:`NvlinkSpan.shared_nodes` names such nodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.decision import PlacementDecision
from fabricfit.placement.layout import GROUP_KINDS, Groups


def _no_counts() -> Mapping[str, int]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class NvlinkSpan:
    """How a plan uses NVLink across nodes.

    ``groups``: per dimension, how many of its groups span trays of one NVLink domain;
    ``nodes``: the job's distinct nodes in pod order (what a ComputeDomain spans);
    ``domains``: the NVLink domains those spanning groups use;
    ``shared_nodes``: nodes that carry more than one pod of the job."""

    groups: Mapping[str, int] = field(default_factory=_no_counts)
    nodes: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    shared_nodes: tuple[str, ...] = ()

    @property
    def needed(self) -> bool:
        """Whether some group's traffic needs multi-node NVLink to run as predicted."""
        return any(self.groups.values())

    def describe(self) -> str:
        """The spanning groups in words, e.g. ``4 tensor groups, 2 expert groups``."""
        parts = [f"{n} {kind} group{'s' if n != 1 else ''}" for kind, n in self.groups.items() if n]
        return ", ".join(parts)


def has_nvlink(profile: FabricProfile | None) -> bool:
    """Whether the fabric's scale-up domain is NVLink (a GPU fabric), not a TPU slice's ICI.
    ``None`` (the fabric is not known here) counts as a GPU fabric."""
    return profile is None or not profile.is_torus


def nvlink_span(
    plan: Sequence[str],
    groups: Mapping[str, Groups],
    gpus_per_pod: int,
    domain_of: Mapping[str, str],
    *,
    profile: FabricProfile | None = None,
) -> NvlinkSpan:
    """The span of ``plan`` (pod index -> node) for the layout ``groups`` on ``profile``'s fabric
    (empty on a TPU torus: module docstring).

    ``domain_of`` maps a node to its NVLink domain; a node missing from it is a domain alone.
    Ranks beyond the plan (an incomplete plan) are ignored."""
    if gpus_per_pod < 1 or not plan or not has_nvlink(profile):
        return NvlinkSpan()
    counts: dict[str, int] = {}
    domains: set[str] = set()
    for kind in GROUP_KINDS:
        spanning = 0
        for group in groups.get(kind, ()):
            nodes = {plan[r // gpus_per_pod] for r in group if r // gpus_per_pod < len(plan)}
            shared = {domain_of.get(n, f"node:{n}") for n in nodes}
            if len(nodes) > 1 and len(shared) == 1:
                spanning += 1
                domains |= shared
        if spanning:
            counts[kind] = spanning
    per_node = Counter(plan)
    return NvlinkSpan(
        groups=MappingProxyType(counts),
        nodes=tuple(dict.fromkeys(plan)),
        domains=tuple(sorted(domains)),
        shared_nodes=tuple(sorted(n for n, c in per_node.items() if c > 1)),
    )


def decision_span(
    decision: PlacementDecision,
    snapshot: ClusterSnapshot,
    gpus_per_pod: int,
    profile: FabricProfile,
) -> NvlinkSpan:
    """The span of a feasible decision on the snapshot and fabric it was made on (empty when
    infeasible)."""
    if not decision.feasible:
        return NvlinkSpan()
    domains = {
        n: snapshot.node(n).place.nvlink_domain for n in set(decision.pods) if snapshot.has_node(n)
    }
    return nvlink_span(decision.pods, decision.groups, gpus_per_pod, domains, profile=profile)
