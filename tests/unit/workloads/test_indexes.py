"""Workload kinds: the global pod index read from a pod's labels, and index parsing."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.api.constants import (
    JOB_COMPLETION_INDEX_LABEL,
    JOBSET_JOB_INDEX_LABEL,
    JOBSET_REPLICATED_JOB_LABEL,
    KUBEFLOW_REPLICA_INDEX_LABEL,
    KUBEFLOW_REPLICA_TYPE_LABEL,
    LWS_GROUP_INDEX_LABEL,
    LWS_WORKER_INDEX_LABEL,
)
from fabricfit.workloads import pod_index
from fabricfit.workloads.base import parse_index
from unit.workloads.samples import (
    JOB,
    JOBSET,
    LWS,
    PYTORCH,
    PYTORCH_WORKERS_ONLY,
    pod,
)

CM = JOB_COMPLETION_INDEX_LABEL
INDEX_CASES: list[tuple[str, str, dict[str, Any] | None, dict[str, Any], int | None]] = [
    ("job", "Job", JOB, pod(**{CM: "5"}), 5),
    ("job without workload", "Job", None, pod(**{CM: "12"}), 12),
    ("job index beyond completions", "Job", JOB, pod(**{CM: "8"}), None),
    ("job garbage", "Job", JOB, pod(**{CM: "05"}), None),
    ("job negative", "Job", JOB, pod(**{CM: "-1"}), None),
    ("job missing", "Job", JOB, pod(), None),
    (
        "jobset a/0/0",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "0", CM: "0"}),
        0,
    ),
    (
        "jobset a/1/2",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "1", CM: "2"}),
        5,
    ),
    (
        "jobset b/0/3",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "b", JOBSET_JOB_INDEX_LABEL: "0", CM: "3"}),
        9,
    ),
    (
        "jobset completion out of range",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "0", CM: "3"}),
        None,
    ),
    (
        "jobset job out of range",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "2", CM: "0"}),
        None,
    ),
    (
        "jobset unknown rj",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "z", JOBSET_JOB_INDEX_LABEL: "0", CM: "0"}),
        None,
    ),
    (
        "jobset needs workload",
        "JobSet",
        None,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "0", CM: "0"}),
        None,
    ),
    (
        "pytorch master",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "master", KUBEFLOW_REPLICA_INDEX_LABEL: "0"}),
        0,
    ),
    (
        "pytorch worker 2",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "worker", KUBEFLOW_REPLICA_INDEX_LABEL: "2"}),
        3,
    ),
    (
        "pytorch Worker capitalised",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "Worker", KUBEFLOW_REPLICA_INDEX_LABEL: "0"}),
        1,
    ),
    (
        "pytorch worker beyond replicas",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "worker", KUBEFLOW_REPLICA_INDEX_LABEL: "3"}),
        None,
    ),
    (
        "pytorch workers only",
        "PyTorchJob",
        PYTORCH_WORKERS_ONLY,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "worker", KUBEFLOW_REPLICA_INDEX_LABEL: "3"}),
        3,
    ),
    (
        "pytorch no workload assumes a master",
        "PyTorchJob",
        None,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "worker", KUBEFLOW_REPLICA_INDEX_LABEL: "3"}),
        4,
    ),
    (
        "pytorch master 1",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "master", KUBEFLOW_REPLICA_INDEX_LABEL: "1"}),
        None,
    ),
    (
        "pytorch other type",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "ps", KUBEFLOW_REPLICA_INDEX_LABEL: "0"}),
        None,
    ),
    (
        "lws leader of group 1",
        "LeaderWorkerSet",
        LWS,
        pod(**{LWS_GROUP_INDEX_LABEL: "1", LWS_WORKER_INDEX_LABEL: "0"}),
        4,
    ),
    (
        "lws worker 3 of group 1",
        "LeaderWorkerSet",
        LWS,
        pod(**{LWS_GROUP_INDEX_LABEL: "1", LWS_WORKER_INDEX_LABEL: "3"}),
        7,
    ),
    (
        "lws worker beyond size",
        "LeaderWorkerSet",
        LWS,
        pod(**{LWS_GROUP_INDEX_LABEL: "0", LWS_WORKER_INDEX_LABEL: "4"}),
        None,
    ),
    (
        "lws group beyond replicas",
        "LeaderWorkerSet",
        LWS,
        pod(**{LWS_GROUP_INDEX_LABEL: "2", LWS_WORKER_INDEX_LABEL: "0"}),
        None,
    ),
    ("lws missing group", "LeaderWorkerSet", LWS, pod(**{LWS_WORKER_INDEX_LABEL: "1"}), None),
    ("unknown kind", "Deployment", JOB, pod(**{CM: "1"}), None),
]


@pytest.mark.parametrize(
    ("name", "kind", "workload", "the_pod", "index"), INDEX_CASES, ids=[c[0] for c in INDEX_CASES]
)
def test_pod_index(
    name: str,
    kind: str,
    workload: dict[str, Any] | None,
    the_pod: dict[str, Any],
    index: int | None,
) -> None:
    assert pod_index(kind, the_pod, workload) == index


def test_pod_index_for_plain_pods_uses_the_index_label() -> None:
    labelled = pod(rank="3")
    assert pod_index("Pod", labelled, index_label="rank") == 3
    assert pod_index("Pod", labelled) is None
    assert pod_index("Pod", pod(rank="x"), index_label="rank") is None
    assert pod_index("Pod", {"metadata": {"labels": None}}, index_label="rank") is None


@pytest.mark.parametrize(
    ("value", "index"),
    [
        ("0", 0),
        ("17", 17),
        ("007", None),
        ("", None),
        ("+1", None),
        (" 1", None),
        ("1.0", None),
        (3, None),
        (None, None),
        ("1" * 10, None),
        ("٣", None),
    ],
)
def test_parse_index(value: Any, index: int | None) -> None:
    assert parse_index(value) == index
