"""A LeaderWorkerSet, its pods and how they are numbered, shared by the LWS e2e tests."""

from __future__ import annotations

from typing import Any

from fabricfit_dev.e2e.kueue import QUEUE_LABEL
from fabricfit_dev.e2e.objects import POOL_LABEL

LWS = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
GATE = "fabricfit.dev/placement"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def leader_worker_set(
    name: str,
    groups: int,
    size: int,
    *,
    pool: str | None = None,
    gated: bool = True,
    queue: str | None = None,
) -> dict[str, Any]:
    """``groups`` groups of ``size`` 8-GPU pods (leader and workers from the same template),
    with fabricfit's gate unless ``gated`` is False, on the pool's nodes, in Kueue's ``queue``."""
    spec: dict[str, Any] = {
        "schedulingGates": [{"name": GATE}] if gated else [],
        "containers": [{"name": "serve", "image": "example.invalid/serve:1",
                        "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
    }  # fmt: skip
    if pool is not None:
        spec["nodeSelector"] = {POOL_LABEL: pool}
    pod = {"spec": spec}
    return {
        "apiVersion": f"{LWS[0]}/{LWS[1]}",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, **({"labels": {QUEUE_LABEL: queue}} if queue else {})},
        "spec": {
            "replicas": groups,
            "leaderWorkerTemplate": {"size": size, "leaderTemplate": pod, "workerTemplate": pod},
        },
    }


def live_pods(core: Any, namespace: str, name: str, size: int) -> dict[int, Any]:
    """The LWS's pods not being deleted, by rank block (group index x size + worker index)."""
    pods = core.list_namespaced_pod(
        namespace, label_selector=f"leaderworkerset.sigs.k8s.io/name={name}"
    ).items
    return {
        int(p.metadata.labels[GROUP_INDEX]) * size + int(p.metadata.labels[WORKER_INDEX]): p
        for p in pods
        if p.metadata.deletion_timestamp is None
    }


def bound_pods(
    core: Any, namespace: str, name: str, groups: int, size: int
) -> dict[int, Any] | None:
    """Every pod of the LWS by rank block, once all of them are bound (else None)."""
    pods = live_pods(core, namespace, name, size)
    done = len(pods) == groups * size and all(p.spec.node_name for p in pods.values())
    return pods if done else None
