"""What the operator knows about the cluster between API calls.

Three maps: nodes (by name) and the bound pods kopf does not watch, mirrored by start-up's own
list + watch (``kube.mirror``, ``reconcile.cluster_pods``); and from kopf's indexes, the
pods that belong to a TrainingTopology (by namespace/name) and the TrainingTopologies
(reservation and resourceVersion). Start-up waits for the mirrors' first listing and kopf starts
no handler before every index has finished its own, so after a restart the first plan already
sees every node, busy GPU and reservation recorded in the cluster.

The reservation ledger guards against double-booking: a plan's GPUs are held from the moment
its status is written until its pods are bound (then the pods themselves count). Our own status
writes update the ledger at once, and watch events older than them are ignored.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.fabric.pods import pod_gpu_request
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.render.record import PlanRecord, read_plan

TopologyKey = tuple[str, str]  # (namespace, name)


def node_entry(body: Mapping[str, Any]) -> tuple[tuple[str, str], dict[str, Any]]:
    """A node's key and slim copy, for the node mirror."""
    return ("", str((body.get("metadata") or {}).get("name") or "")), slim_node(body)


def slim_node(body: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a Node the snapshot builder reads."""
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    status = body.get("status") or {}
    return {
        "metadata": {"name": meta.get("name"), "labels": dict(meta.get("labels") or {})},
        "spec": {
            "unschedulable": spec.get("unschedulable", False),
            "taints": list(spec.get("taints") or []),
        },
        "status": {
            "allocatable": dict(status.get("allocatable") or {}),
            "capacity": dict(status.get("capacity") or {}),
            "conditions": [
                {"type": c.get("type"), "status": c.get("status")}
                for c in status.get("conditions") or []
                if isinstance(c, Mapping)
            ],
        },
    }


def slim_pod(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The parts of a Pod that matter for GPU accounting and pinning; None if irrelevant."""
    meta = body.get("metadata") or {}
    spec = body.get("spec") or {}
    labels = dict(meta.get("labels") or {})
    if not spec.get("nodeName") and TOPOLOGY_LABEL not in labels:
        return None

    def resources(containers: Any) -> list[dict[str, Any]]:
        # restartPolicy marks sidecar init containers, whose requests add up (not max).
        return [
            {"resources": c.get("resources") or {}, "restartPolicy": c.get("restartPolicy")}
            for c in containers or []
            if isinstance(c, Mapping)
        ]

    return {
        "metadata": {
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "labels": labels,
            "deletionTimestamp": meta.get("deletionTimestamp"),
        },
        "spec": {
            "nodeName": spec.get("nodeName"),
            "containers": resources(spec.get("containers")),
            "initContainers": resources(spec.get("initContainers")),
            "overhead": spec.get("overhead"),
            "schedulingGates": list(spec.get("schedulingGates") or []),
            "affinity": spec.get("affinity"),
        },
        "status": _slim_status(body.get("status") or {}, bound=bool(spec.get("nodeName"))),
    }


def _slim_status(status: Mapping[str, Any], *, bound: bool) -> dict[str, Any]:
    """The phase, and for an unbound pod its ``PodScheduled`` condition (a pinned pod that
    kube-scheduler calls Unschedulable is re-placed: ``render.pods.stuck_on``) and the names of
    its own ResourceClaims (``reconcile.devices`` allocates them)."""
    slim: dict[str, Any] = {"phase": status.get("phase")}
    claims = status.get("resourceClaimStatuses")
    if claims and not bound:  # the pod's own ResourceClaims: device-exact placement allocates them
        slim["resourceClaimStatuses"] = claims
    if not bound:
        scheduled = [
            {"type": c.get("type"), "status": c.get("status"), "reason": c.get("reason")}
            for c in status.get("conditions") or []
            if isinstance(c, Mapping) and c.get("type") == "PodScheduled"
        ]
        if scheduled:
            slim["conditions"] = scheduled
    return slim


@dataclass(frozen=True)
class Holding:
    """What the watch last showed of a TrainingTopology: its recorded plan (reservation
    included) and what a pod event needs to pin straight from it (``podevents.pin_from_plan``)."""

    resource_version: int
    plan: PlanRecord = field(default_factory=PlanRecord)
    kind: str = ""
    workload: str = ""  # the workloadRef's name (a Kueue Workload event finds its topology)
    index_label: str | None = None
    mode: str = ""
    current: bool = False  # the status was written for the spec's present generation
    # A served model's spec and the status fields its partner reads (policy.pairing); None
    # for training jobs.
    served: Mapping[str, Any] | None = None
    deleting: bool = False  # being deleted: its plan is released, its pods are not pinned
    # What the link load needs to turn the plan into traffic (reconcile.linkload): the spec as
    # written (a private copy), its generation, and the GPUs per pod the status settled.
    spec: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    generation: int | None = None
    gpus_per_pod: int | None = None


def holding_of(body: Mapping[str, Any]) -> Holding:
    status = body.get("status") or {}
    spec = body.get("spec") or {}
    ref = spec.get("workloadRef") or {}
    placement = spec.get("placement") or {}
    generation = (body.get("metadata") or {}).get("generation")
    return Holding(
        resource_version(body),
        read_plan(status),
        kind=str(ref.get("kind") or ""),
        workload=str(ref.get("name") or ""),
        index_label=ref.get("indexLabel") if isinstance(ref.get("indexLabel"), str) else None,
        mode=str(placement.get("mode") or "pinned"),
        current=generation is not None and status.get("observedGeneration") == generation,
        served=_served(spec, status),
        deleting=bool((body.get("metadata") or {}).get("deletionTimestamp")),
        spec=copy.deepcopy(dict(spec)) if isinstance(spec, Mapping) else {},
        generation=generation if isinstance(generation, int) else None,
        gpus_per_pod=_positive(status.get("gpusPerPod")),
    )


def _served(spec: Mapping[str, Any], status: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What a partner reads of a served model (its spec; its plan and GPUs per pod)."""
    if not isinstance(spec, Mapping) or not spec.get("serving"):
        return None
    kept = {k: status[k] for k in ("pods", "gpusPerPod") if k in status}
    return {"spec": copy.deepcopy(dict(spec)), "status": copy.deepcopy(kept)}


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def resource_version(body: Mapping[str, Any]) -> int:
    raw = (body.get("metadata") or {}).get("resourceVersion")
    try:
        return int(str(raw))
    except (TypeError, ValueError):
        return 0


@dataclass
class Ledger:
    """Reservations of every TrainingTopology: from the watch, overridden by our newer writes."""

    written: dict[TopologyKey, Holding] = field(default_factory=dict)
    statuses: dict[TopologyKey, tuple[int, dict[str, Any]]] = field(default_factory=dict)

    def record(self, key: TopologyKey, body: Mapping[str, Any]) -> None:
        """Remember the TrainingTopology as our own write returned it."""
        self.written[key] = holding_of(body)
        self.statuses[key] = (resource_version(body), copy.deepcopy(dict(body.get("status") or {})))

    def forget(self, key: TopologyKey) -> None:
        self.written.pop(key, None)
        self.statuses.pop(key, None)

    def newest_status(self, key: TopologyKey, body: Mapping[str, Any]) -> dict[str, Any]:
        """A private copy of the newest status known: the body's, or our own later write's.

        kopf's ``body`` is a live view that the watch may replace during a reconcile, and may
        still predate our last write; a reconcile must read one consistent status, once."""
        mine = self.statuses.get(key)
        if mine is not None and mine[0] > resource_version(body):
            return copy.deepcopy(mine[1])
        return copy.deepcopy(dict(body.get("status") or {}))

    def newest(self, key: TopologyKey, seen: Holding | None) -> Holding | None:
        """The newer of what the watch showed and what we last wrote (None: unknown)."""
        mine = self.written.get(key)
        if mine is None or (seen is not None and seen.resource_version >= mine.resource_version):
            return seen
        return mine

    def merged(
        self, watched: Mapping[TopologyKey, Holding]
    ) -> dict[TopologyKey, Mapping[str, int]]:
        """Per topology, the newest known reservation of GPUs by count (deleted topologies drop
        out); devices a plan names are held device by device (:meth:`device_holds`)."""
        result: dict[TopologyKey, Mapping[str, int]] = {}
        for key, seen in watched.items():
            newest = self.newest(key, seen)
            if newest is not None:
                result[key] = newest.plan.count_reservation
        return result

    def device_holds(
        self, me: TopologyKey, watched: Mapping[TopologyKey, Holding]
    ) -> dict[str, frozenset[str]]:
        """The DRA GPUs other plans chose, per node (whether or not their claims are allocated
        yet: an allocated one is held by its claim too, and a set counts it once)."""
        held: dict[str, frozenset[str]] = {}
        for key, seen in watched.items():
            newest = self.newest(key, seen) if key != me else None
            for node, gpus in (newest.plan.device_holds if newest is not None else {}).items():
                held[node] = held.get(node, frozenset()) | gpus
        return held


def holds_of_others(
    me: TopologyKey,
    reservations: Mapping[TopologyKey, Mapping[str, int]],
    pods: Iterable[Mapping[str, Any]],
    claimed: Mapping[tuple[str, str], int] | None = None,
) -> dict[str, int]:
    """GPUs other plans hold beyond what their bound pods use (the snapshot counts those);
    ``claimed`` adds the GPUs each pod's DRA claims hold, by (namespace, pod name)."""
    bound = bound_gpus(pods, claimed)
    holds: dict[str, int] = {}
    for holder, by_node in reservations.items():
        if holder == me:
            continue
        for node, gpus in by_node.items():
            extra = gpus - bound.get((holder, node), 0)
            if extra > 0:
                holds[node] = holds.get(node, 0) + extra
    return holds


def bound_gpus(
    pods: Iterable[Mapping[str, Any]], claimed: Mapping[tuple[str, str], int] | None = None
) -> dict[tuple[TopologyKey, str], int]:
    """GPUs the live bound pods of each TrainingTopology use, per (its key, node)."""
    claimed = claimed or {}
    bound: dict[tuple[TopologyKey, str], int] = {}
    owner_key: TopologyKey
    for pod in pods:
        meta = pod.get("metadata") or {}
        owner = (meta.get("labels") or {}).get(TOPOLOGY_LABEL)
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if owner and node and phase not in {"Succeeded", "Failed"}:
            owner_key = (str(meta.get("namespace") or ""), str(owner))
            gpus = pod_gpu_request(pod, []) + claimed.get((owner_key[0], str(meta.get("name"))), 0)
            bound[(owner_key, node)] = bound.get((owner_key, node), 0) + gpus
    return bound


def take_snapshot(
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]],
    *,
    scheme: str,
    default_fabric: str,
    slices: Iterable[Mapping[str, Any]] = (),
    claims: Iterable[Mapping[str, Any]] = (),
) -> ClusterSnapshot:
    return build_snapshot(
        list(nodes),
        list(pods),
        scheme=scheme,
        default_fabric=default_fabric,
        resource_slices=list(slices),
        resource_claims=list(claims),
    )
