"""Manifests of what the e2e suite and the load benchmark submit: suspended Indexed Jobs of GPU
pods fenced into a node pool, and their TrainingTopologies (pure builders)."""

from __future__ import annotations

from typing import Any

from fabricfit_dev.cluster.fakenodes import POOL_LABEL
from fabricfit_dev.kube import TT

__all__ = ["TT", "indexed_job", "topology"]


def indexed_job(name: str, pods: int, pool: str, gpus: int = 8) -> dict[str, Any]:
    """A suspended Indexed Job of ``pods`` pods of ``gpus`` GPUs, confined to the node pool
    ``pool`` (the nodes of ``FakeFabric(pool=...)``)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "suspend": True,
            "completionMode": "Indexed",
            "completions": pods,
            "parallelism": pods,
            "backoffLimit": 100,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {POOL_LABEL: pool},
                    "containers": [{"name": "train", "image": "example.invalid/train:1",
                                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
                }
            },
        },
    }  # fmt: skip


def topology(name: str, job: str, parallelism: dict[str, int], **spec: Any) -> dict[str, Any]:
    """A TrainingTopology of 8-GPU pods for the Job ``job`` (``spec`` adds or overrides fields)."""
    return {
        "apiVersion": f"{TT[0]}/{TT[1]}",
        "kind": "TrainingTopology",
        "metadata": {"name": name},
        "spec": {"workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": job},
                 "gpusPerPod": 8, "parallelism": parallelism, **spec},
    }  # fmt: skip
