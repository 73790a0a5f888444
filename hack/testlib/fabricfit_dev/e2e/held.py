"""Jobs whose pods wait on a gate of the test's own besides fabricfit's, and other teams' pods.

fabricfit pins a pod and removes only its own gate, so a pod of a held Job is pinned but not
tried by kube-scheduler until the test lifts its gate: a pod that is not fabricfit's can take
the pinned node in between, deterministically (reservations are invisible to kube-scheduler).
"""

from __future__ import annotations

from typing import Any

from fabricfit_dev.cluster.jobs import indexed_job
from fabricfit_dev.kube import job_pods

HOLD = "e2e.fabricfit.dev/hold"
GATE = "fabricfit.dev/placement"


def held_job(name: str, pods: int, pool: str) -> dict[str, Any]:
    """A suspended Indexed Job whose pods also carry the test's own gate."""
    job = indexed_job(name, pods, pool)
    job["spec"]["template"]["spec"]["schedulingGates"] = [{"name": HOLD}]
    return job


def tenant(name: str, node: str, gpus: int) -> dict[str, Any]:
    """Another team's pod (no fabricfit label) that kube-scheduler places on ``node``."""
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "c", "image": "example.invalid/other:1",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
    }  # fmt: skip


def gates(pod: Any) -> list[str]:
    return [g.name for g in pod.spec.scheduling_gates or []]


def pinned(core: Any, namespace: str, job: str, count: int) -> dict[int, Any] | None:
    """The job's pods once all ``count`` are pinned by fabricfit (only the test's gate left)."""
    pods = job_pods(core, namespace, job)
    done = len(pods) == count and all(gates(p) == [HOLD] for p in pods.values())
    return pods if done else None


def release_hold(core: Any, namespace: str, job: str) -> None:
    """Remove the test's gate from every pod of the job that fabricfit has pinned."""
    for pod in job_pods(core, namespace, job).values():
        names = gates(pod)
        if HOLD not in names or GATE in names:
            continue
        index = names.index(HOLD)
        ops = [{"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": HOLD},
               {"op": "remove", "path": f"/spec/schedulingGates/{index}"}]  # fmt: skip
        try:
            core.patch_namespaced_pod(pod.metadata.name, namespace, ops)
        except Exception:  # changed or deleted meanwhile: the next pass sees it
            continue


def bound(core: Any, namespace: str, job: str, count: int) -> dict[int, Any] | None:
    """Lift the test's gate where fabricfit has pinned; the pods once all ``count`` are bound."""
    release_hold(core, namespace, job)
    pods = job_pods(core, namespace, job)
    done = len(pods) == count and all(p.spec.node_name for p in pods.values())
    return pods if done else None
