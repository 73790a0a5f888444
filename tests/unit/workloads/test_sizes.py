"""Workload kinds: how many pods a workload runs, in all and per pod template."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.workloads import expected_pods, pod_templates, template_pod_count
from unit.workloads.samples import JOB, JOBSET, LWS, LWS_NO_LEADER, PYTORCH, PYTORCH_WORKERS_ONLY


@pytest.mark.parametrize(
    ("kind", "workload", "pods"),
    [
        ("Job", JOB, 8),
        ("Job", {"spec": {"completions": 8}}, None),  # NonIndexed: pods carry no index
        ("Job", {"spec": {"completionMode": "Indexed"}}, None),
        ("JobSet", JOBSET, 10),
        ("JobSet", {"spec": {"replicatedJobs": []}}, None),
        (
            "JobSet",
            {
                "spec": {
                    "replicatedJobs": [{"template": {"spec": {"completionMode": "NonIndexed"}}}]
                }
            },
            None,
        ),
        ("PyTorchJob", PYTORCH, 4),
        ("PyTorchJob", PYTORCH_WORKERS_ONLY, 4),
        ("PyTorchJob", {"spec": {"pytorchReplicaSpecs": {"Master": {}}}}, 1),
        ("PyTorchJob", {"spec": {}}, None),
        ("LeaderWorkerSet", LWS, 8),
        ("LeaderWorkerSet", LWS_NO_LEADER, 1),
        ("LeaderWorkerSet", {"spec": {"replicas": "2"}}, None),
        ("Pod", {}, None),
        ("Job", {}, None),
    ],
)
def test_expected_pods(kind: str, workload: dict[str, Any], pods: int | None) -> None:
    assert expected_pods(kind, workload) == pods


@pytest.mark.parametrize(
    ("kind", "workload", "counts"),
    [
        ("Job", JOB, [8]),
        ("JobSet", JOBSET, [6, 4]),
        ("PyTorchJob", PYTORCH, [1, 3]),
        ("PyTorchJob", PYTORCH_WORKERS_ONLY, [4]),
        ("LeaderWorkerSet", LWS, [1, 3]),
        ("LeaderWorkerSet", LWS_NO_LEADER, [1]),
    ],
)
def test_template_pod_count(kind: str, workload: dict[str, Any], counts: list[int]) -> None:
    paths = [path for path, _ in pod_templates(kind, workload)]
    assert [template_pod_count(kind, workload, p) for p in paths] == counts


def test_template_pod_count_unknown() -> None:
    assert template_pod_count("Pod", {}, ("spec",)) is None
    path = ("spec", "replicatedJobs", 7, "template", "spec", "template")
    assert template_pod_count("JobSet", JOBSET, path) is None
    assert template_pod_count("Job", {"spec": {}}, ("spec", "template")) is None
