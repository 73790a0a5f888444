"""Building blocks of end-to-end tests: fake GPU node pools, Jobs, TrainingTopologies, waits."""

from __future__ import annotations

from typing import Any

from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.cluster.fakenodes import NATIVE, POOL_LABEL
from fabricfit_dev.cluster.jobs import TT, indexed_job, topology
from fabricfit_dev.kube import condition, has_condition, job_pods, read_topology
from fabricfit_dev.waiting import wait_for

__all__ = [  # the builders live in cluster.jobs and the reads in kube (the benchmarks use them)
    "NATIVE", "POOL_LABEL", "RAIL_GROUP", "SPINE", "TT", "condition", "foreign_pod",
    "indexed_job", "job_pods", "make_pool", "placed_names", "planned", "read_topology",
    "submit_job", "topology", "wait_bound", "wait_condition",
]  # fmt: skip

RAIL_GROUP = NATIVE + "rail-group"
SPINE = NATIVE + "spine"


def make_pool(core: Any, pool: str, **shape: Any) -> list[dict[str, Any]]:
    """A pool of ready kwok nodes named, fenced and with topology ids of its own (``pool``)."""
    fabric = fakenodes.FakeFabric(prefix=pool, pool=pool, ids=pool, **shape)
    manifests = fakenodes.node_manifests(fabric)
    fakenodes.wait_ready(core, fakenodes.create_nodes(core, manifests))
    return manifests


def foreign_pod(name: str, node: str, gpus: int) -> dict[str, Any]:
    """Another tenant's pod, already bound to ``node`` (kwok runs it)."""
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "example.invalid/other:1",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
    }  # fmt: skip


def submit_job(
    batch: Any,
    custom: Any,
    namespace: str,
    name: str,
    *,
    pods: int,
    pool: str,
    parallelism: dict[str, int],
    **spec: Any,
) -> None:
    """A suspended Indexed Job of ``pods`` 8-GPU pods in ``pool`` and its TrainingTopology,
    both called ``name`` (``spec`` adds or overrides TrainingTopology fields)."""
    batch.create_namespaced_job(namespace, indexed_job(name, pods, pool))
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], topology(name, name, parallelism, **spec)
    )


def wait_condition(
    custom: Any, ns: str, name: str, type_: str, status: str, timeout: float = 90
) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        tt = read_topology(custom, ns, name)
        c = condition(tt, type_)
        return tt if c is not None and c["status"] == status else None

    return wait_for(check, timeout_seconds=timeout, what=f"{name} {type_}={status}")


def placed_names(custom: Any, ns: str) -> set[str]:
    """The TrainingTopologies of ``ns`` whose Placed condition is True."""
    items = custom.list_namespaced_custom_object(*TT[:2], ns, TT[2])["items"]
    return {tt["metadata"]["name"] for tt in items if has_condition(tt, "Placed")}


def planned(tt: dict[str, Any]) -> list[str]:
    items = sorted(tt["status"]["pods"], key=lambda p: p["index"])
    return [p["node"] for p in items]


def wait_bound(core: Any, ns: str, job: str, count: int) -> dict[int, Any]:
    def check() -> dict[int, Any] | None:
        pods = job_pods(core, ns, job)
        done = len(pods) == count and all(p.spec.node_name for p in pods.values())
        return pods if done else None

    return wait_for(check, timeout_seconds=90, what=f"{count} pods of {job} bound")
