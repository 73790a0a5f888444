"""Kueue objects for end-to-end tests against the real Kueue (``controllers("kueue")``), and the
read-back of what Kueue decided: a job's Workload and its TopologyAssignment, decoded (the pure
builders and decoders live in ``fabricfit_dev.cluster.kueueobjects``, shared with the benchmarks).

Cluster-scoped objects (Topology, ResourceFlavor, ClusterQueue) get test-chosen names; ``Queues``
creates a full chain and deletes it again, so tests sharing a session do not see each other's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from fabricfit.api.constants import ADMISSION_CHECK_CONTROLLER
from fabricfit_dev.cluster import kueueobjects
from fabricfit_dev.cluster.kueueobjects import (
    GROUP,
    HOSTNAME,
    QUEUE_LABEL,
    VERSION,
    admission_check,
    assignment_counts,
    cluster_queue,
    is_admitted,
    local_queue,
    owned_workload,
    podset_assignments,
    resource_flavor,
)
from fabricfit_dev.e2e.objects import NATIVE, POOL_LABEL
from fabricfit_dev.waiting import wait_for

__all__ = [
    "GROUP",
    "HOSTNAME",
    "NATIVE",
    "NATIVE_LEVELS",
    "QUEUE_LABEL",
    "VERSION",
    "assignment_counts",
    "cluster_queue",
    "domain_of",
    "local_queue",
    "podset_assignments",
    "queues",
    "resource_flavor",
    "topology",
    "wait_admitted",
    "workload_of",
]

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
    return kueueobjects.topology(name, levels)


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
    return owned_workload(listing.get("items", []), owner_uid)


def wait_admitted(
    custom: Any, namespace: str, owner_uid: str, timeout: float = 90
) -> dict[str, Any]:
    def admitted() -> dict[str, Any] | None:
        wl = workload_of(custom, namespace, owner_uid)
        return wl if wl is not None and is_admitted(wl) else None

    return wait_for(admitted, timeout_seconds=timeout, what="Kueue to admit the workload")


@contextmanager
def cluster_objects(custom: Any, objects: Sequence[tuple[str, dict[str, Any]]]) -> Iterator[None]:
    """Create cluster-scoped Kueue objects and delete them again, last first."""
    created: list[tuple[str, str]] = []
    try:
        for plural, body in objects:
            custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
            created.append((plural, body["metadata"]["name"]))
        yield
    finally:
        for plural, name in reversed(created):
            custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)


@contextmanager
def checked_queue(
    custom: Any, namespace: str, pool: str, gpus: int, *, preempt: bool = False
) -> Iterator[str]:
    """ResourceFlavor (the pool's nodes), fabricfit's AdmissionCheck, a ClusterQueue using it
    and a LocalQueue, all named after the namespace; yields the LocalQueue's name."""
    name = namespace
    queue = cluster_queue(name, name, gpus, admission_checks=[name])
    if preempt:
        queue["spec"]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    objects = [
        ("resourceflavors", resource_flavor(name, {POOL_LABEL: pool})),
        ("admissionchecks", admission_check(name, ADMISSION_CHECK_CONTROLLER)),
        ("clusterqueues", queue),
    ]
    with cluster_objects(custom, objects):
        custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "localqueues", local_queue(name, name)
        )
        yield name
