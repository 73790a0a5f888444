"""A suspended JobSet, its pods and how they are numbered, shared by the JobSet e2e tests."""

from __future__ import annotations

from typing import Any

from fabricfit_dev.e2e.objects import POOL_LABEL

JOBSET = ("jobset.x-k8s.io", "v1alpha2", "jobsets")


def jobset(name: str, pool: str, replicated: list[tuple[str, int, int]]) -> dict[str, Any]:
    """A suspended JobSet; ``replicated`` lists (name, replicas, pods per job)."""

    def job(rj: str, replicas: int, pods: int) -> dict[str, Any]:
        return {"name": rj, "replicas": replicas, "template": {"spec": {
            "completionMode": "Indexed", "completions": pods, "parallelism": pods,
            "backoffLimit": 100,
            "template": {"spec": {
                "restartPolicy": "Never",
                "nodeSelector": {POOL_LABEL: pool},
                "containers": [{"name": "train", "image": "example.invalid/train:1",
                                "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            }},
        }}}  # fmt: skip

    return {
        "apiVersion": f"{JOBSET[0]}/{JOBSET[1]}",
        "kind": "JobSet",
        "metadata": {"name": name},
        "spec": {"suspend": True, "replicatedJobs": [job(*rj) for rj in replicated]},
    }


def live_pods(core: Any, namespace: str) -> list[Any]:
    """The JobSet ``train``'s pods that are not being deleted."""
    selector = "jobset.sigs.k8s.io/jobset-name=train"
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def bound_pods(core: Any, namespace: str, count: int) -> list[Any] | None:
    """The JobSet's ``count`` live pods once every one is bound, else None."""
    live = live_pods(core, namespace)
    return live if len(live) == count and all(p.spec.node_name for p in live) else None


def rank_of(pod: Any, shapes: dict[str, tuple[int, int]], order: list[str]) -> int:
    """Pod k = pods of the replicated jobs before it + job index * pods per job + completion."""
    labels = pod.metadata.labels
    name = labels["jobset.sigs.k8s.io/replicatedjob-name"]
    offset = sum(shapes[rj][0] * shapes[rj][1] for rj in order[: order.index(name)])
    per_job = shapes[name][1]
    job = int(labels["jobset.sigs.k8s.io/job-index"])
    return offset + job * per_job + int(labels["batch.kubernetes.io/job-completion-index"])
