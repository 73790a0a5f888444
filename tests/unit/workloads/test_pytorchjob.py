"""PyTorchJob: pod k is the RANK the training operator gives it (Master first, then Workers)."""

from __future__ import annotations

from fabricfit.workloads.pytorchjob import PYTORCHJOB

PT = {"spec": {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": {
    "Master": {"replicas": 1, "template": {"m": 1}},
    "Worker": {"replicas": 3, "template": {"w": 1}}}}}  # fmt: skip


def labels(replica_type: str, index: int) -> dict[str, str]:
    return {
        "training.kubeflow.org/replica-type": replica_type,
        "training.kubeflow.org/replica-index": str(index),
    }


def test_master_then_workers() -> None:
    assert PYTORCHJOB.expected_pods(PT) == 4
    assert PYTORCHJOB.local_index(labels("master", 0), PT, None) == 0
    assert PYTORCHJOB.local_index(labels("Worker", 2), PT, None) == 3
    assert PYTORCHJOB.local_index(labels("master", 1), PT, None) is None
    assert PYTORCHJOB.local_index(labels("launcher", 0), PT, None) is None


def test_workers_carry_the_ranks_and_pod_affinity_may_change() -> None:
    assert PYTORCHJOB.rank_template(PT) == {"w": 1}
    paths = PYTORCHJOB.template_paths(PT)
    assert [PYTORCHJOB.template_pod_count(PT, p) for p in paths] == [1, 3]
    assert PYTORCHJOB.allows_pod_affinity
    assert PYTORCHJOB.is_suspended(PT) is True
    assert PYTORCHJOB.unsuspend_patch() == {"spec": {"runPolicy": {"suspend": False}}}
