"""Operator-wide configuration and state shared by the handlers (kopf ``memo``), and the
context one reconcile passes down instead of long parameter lists."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabricfit.api.models import TrainingTopologySpec, WorkloadRef
from fabricfit.fabric.deviceask import DeviceAsk
from fabricfit.fabric.podclaims import PodClaims
from fabricfit.fabric.profiles import DEFAULT_PROFILE
from fabricfit.fabric.profiles.catalog import Catalog
from fabricfit.fabric.snapshot import FactsMemo
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube.rest import Rest
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.waiting import STRICT_FIFO
from fabricfit.policy.waiting import HeldPlacement
from fabricfit.reconcile.derived import PerFacts
from fabricfit.reconcile.draft import StatusDraft
from fabricfit.reconcile.inventory import Holding, Ledger, TopologyKey
from fabricfit.reconcile.linkload import RunningTraffic
from fabricfit.render.record import PlanRecord


@dataclass(frozen=True)
class OperatorConfig:
    """Settings of one operator process (from ``fabricfit run`` flags / Helm values)."""

    default_fabric: str = DEFAULT_PROFILE
    # presets plus the custom profiles of --fabric-dir (refused files kept with their reason)
    catalog: Catalog = field(default_factory=Catalog)
    label_scheme: str = "auto"
    resync_seconds: float = 10.0
    namespaces: tuple[str, ...] = ()  # empty: all namespaces
    # The queue policy of admission-check jobs that name none (placement.waiting).
    queue_policy: str = STRICT_FIFO


#: A Kueue Workload's owner: (namespace, kind, name) of the job it was made for.
OwnerKey = tuple[str, str, str]


@dataclass(frozen=True)
class KueueViews:
    """What the Kueue indexes hold (empty when Kueue's API is not served): Workloads by owner
    (several for a job Kueue admits in parts, one per LeaderWorkerSet group), the names of the
    AdmissionChecks fabricfit controls, ResourceFlavors by name."""

    workloads: Mapping[OwnerKey, Sequence[Mapping[str, Any]]] = field(default_factory=dict)
    checks: frozenset[str] = frozenset()
    flavors: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass
class Views:
    """Read-only views of kopf's indexes at the time of a handler call. Never edit an object
    in place: a snapshot takes an object it has seen before as unchanged."""

    nodes: list[Mapping[str, Any]]
    pods: list[Mapping[str, Any]]
    topologies: Mapping[TopologyKey, Holding]
    kueue: KueueViews = field(default_factory=KueueViews)
    # DRA (reconcile.dra): the GPU driver's ResourceSlices and every ResourceClaim; empty when
    # resource.k8s.io is not served.
    slices: Sequence[Mapping[str, Any]] = field(default_factory=list)
    claims: Sequence[Mapping[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Refusal:
    """A template patch the API server refused: for which inputs, when, and what it said."""

    fingerprint: int
    at_seconds: float  # time.monotonic()
    message: str


@dataclass
class OperatorState:
    config: OperatorConfig
    rest: Rest
    ledger: Ledger = field(default_factory=Ledger)
    # Planning is serialised cluster-wide: two plans must never read the same free GPUs.
    plan_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    object_locks: dict[TopologyKey, asyncio.Lock] = field(default_factory=dict)
    # Recent snapshots per label scheme, for the read-only paths (health of running jobs);
    # planning always builds a fresh one under the lock.
    snapshots: dict[str, tuple[float, ClusterSnapshot]] = field(default_factory=dict)
    # What the last snapshot read, reused while a node or pod is unchanged. The views hand out
    # the mirrors' and kopf's own slim copies, which an event replaces and nothing edits in
    # place, so an object seen before is taken as unchanged without comparing it.
    node_facts: FactsMemo = field(default_factory=lambda: FactsMemo(trust_identity=True))
    # What planning derives from the nodes' facts alone (fabric vote, tier keys, fingerprint).
    per_facts: PerFacts = field(default_factory=PerFacts)
    # Per waiting TrainingTopology, the fingerprint of the inputs its last plan did not fit in.
    infeasible: dict[TopologyKey, int] = field(default_factory=dict)
    # Per TrainingTopology, the template patch the API server last refused (reconcile.applying).
    refusals: dict[TopologyKey, Refusal] = field(default_factory=dict)
    # The running jobs' link load, in step with their recorded plans (reconcile.linkload).
    traffic: RunningTraffic = field(default_factory=RunningTraffic)
    # Jobs held for a better placement (reconcile.waiting): other plans leave their GPUs alone.
    holds: dict[TopologyKey, HeldPlacement] = field(default_factory=dict)

    def lock_for(self, key: TopologyKey) -> asyncio.Lock:
        return self.object_locks.setdefault(key, asyncio.Lock())


@dataclass(frozen=True)
class Run:
    """The fixed inputs of one reconcile of one TrainingTopology (taken under its lock).

    ``draft`` is the status being prepared (mutable by design: steps set conditions on it);
    ``record`` is the plan the status showed when the reconcile began, parsed once."""

    key: TopologyKey
    state: OperatorState
    views_of: Callable[[], Views]
    draft: StatusDraft
    record: PlanRecord

    @property
    def namespace(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[1]


@dataclass(frozen=True)
class Target:
    """What the reconcile found to place: the parsed spec, its workload (None while absent),
    the pod template whose constraints the plan honours, the workload's pods, what the planner
    is asked (built once, by the policy, from that spec and template), and the label scheme the
    job's nodes are read with (the spec's, else the operator's; resolved once)."""

    spec: TrainingTopologySpec
    workload: Mapping[str, Any] | None
    template: Mapping[str, Any] | None
    pods: tuple[Mapping[str, Any], ...]
    request: PlacementRequest
    claims: PodClaims = field(default_factory=PodClaims)  # GPUs its pods claim through DRA
    scheme: str = "auto"
    # Whether fabricfit allocates the pods' DRA claims itself, and how (fabric.deviceask).
    devices: DeviceAsk | None = None

    @property
    def ref(self) -> WorkloadRef:
        assert self.spec.workload_ref is not None  # parse_spec refuses specs without one
        return self.spec.workload_ref
