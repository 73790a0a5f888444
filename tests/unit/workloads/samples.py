"""Workloads of every kind, small enough to read, shared by the workload-kind tests."""

from __future__ import annotations

from typing import Any


def tmpl(name: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"role": name}}, "spec": {"containers": [{"name": name}]}}


JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "spec": {"completionMode": "Indexed", "completions": 8, "suspend": True, "template": tmpl("t")},
}
JOBSET: dict[str, Any] = {
    "spec": {
        "suspend": True,
        "replicatedJobs": [
            {
                "name": "a",
                "replicas": 2,
                "template": {"spec": {"completions": 3, "template": tmpl("a")}},
            },
            {"name": "b", "template": {"spec": {"parallelism": 4, "template": tmpl("b")}}},
        ],
    }
}
PYTORCH: dict[str, Any] = {
    "spec": {
        "runPolicy": {"suspend": False},
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": tmpl("m")},
            "Worker": {"replicas": 3, "template": tmpl("w")},
        },
    }
}
PYTORCH_WORKERS_ONLY: dict[str, Any] = {
    "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 4, "template": tmpl("w")}}}
}
LWS: dict[str, Any] = {
    "spec": {
        "replicas": 2,
        "leaderWorkerTemplate": {
            "size": 4,
            "leaderTemplate": tmpl("l"),
            "workerTemplate": tmpl("w"),
        },
    }
}
LWS_NO_LEADER: dict[str, Any] = {"spec": {"leaderWorkerTemplate": {"workerTemplate": tmpl("w")}}}


def pod(**labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}}
