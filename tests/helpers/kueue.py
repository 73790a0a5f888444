"""Kueue objects for end-to-end tests against the real Kueue (``controllers("kueue")``), and the
read-back of what Kueue decided: a job's Workload and its TopologyAssignment, decoded.

Cluster-scoped objects (Topology, ResourceFlavor, ClusterQueue) get test-chosen names; ``Queues``
creates a full chain and deletes it again, so tests sharing a session do not see each other's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from helpers.waiting import wait_for

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
HOSTNAME = "kubernetes.io/hostname"
NATIVE = "topology.fabricfit.dev/"
#: fabricfit's native tiers as Kueue levels, highest first (hostname must be the lowest).
NATIVE_LEVELS = (
    NATIVE + "spine",
    NATIVE + "rail-group",
    NATIVE + "rack",
    NATIVE + "nvlink-domain",
    HOSTNAME,
)


def domain_of(labels: Mapping[str, str], level: str) -> tuple[str, ...]:
    """A node's domain at native ``level``: its value there and at every level above, which is
    how Kueue tells domains apart (a value is only unique within its parent)."""
    upto = NATIVE_LEVELS[: NATIVE_LEVELS.index(level) + 1]
    return tuple(labels[key] for key in upto)


def topology(name: str, levels: Sequence[str] = NATIVE_LEVELS) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": level} for level in levels]},
    }


def resource_flavor(
    name: str, node_labels: Mapping[str, str], topology_name: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": dict(node_labels)}
    if topology_name is not None:
        spec["topologyName"] = topology_name
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def cluster_queue(
    name: str, flavor: str, gpus: int, admission_checks: Sequence[str] = ()
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": flavor,
                         "resources": [{"name": "nvidia.com/gpu", "nominalQuota": gpus}]}],
        }],
    }  # fmt: skip
    if admission_checks:
        spec["admissionChecks"] = list(admission_checks)
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def local_queue(name: str, cluster_queue_name: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue",
            "metadata": {"name": name}, "spec": {"clusterQueue": cluster_queue_name}}  # fmt: skip


@contextmanager
def queues(
    custom: Any,
    namespace: str,
    name: str,
    node_labels: Mapping[str, str],
    gpus: int,
    levels: Sequence[str] | None = NATIVE_LEVELS,
) -> Iterator[str]:
    """Topology (unless ``levels`` is None), ResourceFlavor, ClusterQueue and a LocalQueue in
    ``namespace``, all called ``name``; yields the LocalQueue's name and deletes them after."""
    created: list[tuple[str, str]] = []
    objects = []
    if levels is not None:
        objects.append(("topologies", topology(name, levels)))
    flavor = resource_flavor(name, node_labels, name if levels is not None else None)
    objects += [("resourceflavors", flavor), ("clusterqueues", cluster_queue(name, name, gpus))]
    try:
        for plural, body in objects:
            custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
            created.append((plural, name))
        custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "localqueues", local_queue(name, name)
        )
        yield name
    finally:
        for plural, obj in reversed(created):
            custom.delete_cluster_custom_object(GROUP, VERSION, plural, obj)


def workload_of(custom: Any, namespace: str, owner_uid: str) -> dict[str, Any] | None:
    """The Workload Kueue made for the object with ``owner_uid`` (a Job, JobSet, ...), if any."""
    listing = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "workloads")
    for wl in listing.get("items", []):
        owners = wl["metadata"].get("ownerReferences") or []
        if any(o.get("uid") == owner_uid for o in owners):
            return dict(wl)
    return None


def wait_admitted(
    custom: Any, namespace: str, owner_uid: str, timeout: float = 90
) -> dict[str, Any]:
    def admitted() -> dict[str, Any] | None:
        wl = workload_of(custom, namespace, owner_uid)
        conditions = ((wl or {}).get("status") or {}).get("conditions") or []
        ok = any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)
        return wl if ok else None

    return wait_for(admitted, timeout_seconds=timeout, what="Kueue to admit the workload")


def assignment_counts(assignment: Mapping[str, Any]) -> dict[tuple[str, ...], int]:
    """Pods per domain of a v1beta2 (compressed) TopologyAssignment, keyed by its level values."""
    counts: Counter[tuple[str, ...]] = Counter()
    for piece in assignment.get("slices") or []:
        n = int(piece["domainCount"])
        columns = [_level_values(v, n) for v in piece["valuesPerLevel"]]
        pods = piece["podCounts"]
        per = pods["individual"] if "individual" in pods else [pods["universal"]] * n
        for i in range(n):
            counts[tuple(column[i] for column in columns)] += int(per[i])
    return dict(counts)


def _level_values(values: Mapping[str, Any], count: int) -> list[str]:
    if "universal" in values:
        return [str(values["universal"])] * count
    individual = values["individual"]
    prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
    return [f"{prefix}{root}{suffix}" for root in individual["roots"]]


def podset_assignments(workload: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """PodSet name -> its assignment in ``status.admission``."""
    admission = (workload.get("status") or {}).get("admission") or {}
    return {a["name"]: dict(a) for a in admission.get("podSetAssignments") or []}
