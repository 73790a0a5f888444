"""Kueue objects (Topology, ResourceFlavor, ClusterQueue, LocalQueue) and the read-back of what
Kueue decided (a Workload's TopologyAssignment, decoded): pure builders and decoders shared by
the end-to-end tests and the side-by-side benchmark (``benchmarks/kueue_side_by_side.py``).

The field names are Kueue's ``v1beta2`` API (``apis/kueue/v1beta2`` in kubernetes-sigs/kueue,
the version pinned in ``hack/versions.env``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

GROUP: Final = "kueue.x-k8s.io"
VERSION: Final = "v1beta2"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
HOSTNAME: Final = "kubernetes.io/hostname"


def topology(name: str, levels: Sequence[str]) -> dict[str, Any]:
    """A Topology with ``levels`` (node label keys), highest first; hostname must be last."""
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
    if admission_checks:  # v1beta2: the strategy's list (no flavor restriction: all flavors)
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": name} for name in admission_checks]
        }
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue",
            "metadata": {"name": name}, "spec": spec}  # fmt: skip


def local_queue(name: str, cluster_queue_name: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue",
            "metadata": {"name": name}, "spec": {"clusterQueue": cluster_queue_name}}  # fmt: skip


def admission_check(name: str, controller: str) -> dict[str, Any]:
    """An AdmissionCheck run by ``controller`` (fabricfit's is ``fabricfit.dev/placement``)."""
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "AdmissionCheck",
            "metadata": {"name": name}, "spec": {"controllerName": controller}}  # fmt: skip


def owned_workload(workloads: Sequence[Mapping[str, Any]], owner_uid: str) -> dict[str, Any] | None:
    """The Workload among ``workloads`` that Kueue made for the object with ``owner_uid``."""
    for wl in workloads:
        owners = (wl.get("metadata") or {}).get("ownerReferences") or []
        if any(o.get("uid") == owner_uid for o in owners):
            return dict(wl)
    return None


def condition(workload: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    for c in (workload.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def is_admitted(workload: Mapping[str, Any]) -> bool:
    found = condition(workload, "Admitted")
    return found is not None and found.get("status") == "True"


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
