"""Deployment: no index of its own — fabricfit gives each gated pod the lowest free plan index
as it pins it; a pod being deleted or finished gives its index up."""

from __future__ import annotations

from typing import Any

from fabricfit.workloads import pod_index
from fabricfit.workloads.deployment import DEPLOYMENT, assign_indices

DEPLOY = {"spec": {"replicas": 4, "template": {"spec": {"containers": [{"name": "c"}]}}}}
GATE = [{"name": "fabricfit.dev/placement"}]


def pod(uid: str, created: str, index: int | None = None, **extra: Any) -> dict[str, Any]:
    labels = {"fabricfit.dev/pod-index": str(index)} if index is not None else {}
    meta = {"uid": uid, "name": f"p-{uid}", "creationTimestamp": created, "labels": labels}
    meta.update(extra.pop("meta", {}))
    return {"metadata": meta, "spec": {"schedulingGates": extra.pop("gates", GATE)}, **extra}


def test_the_label_fabricfit_writes_is_the_index() -> None:
    assert DEPLOYMENT.expected_pods(DEPLOY) == 4
    assert pod_index("Deployment", pod("a", "t", 2), DEPLOY) == 2
    assert pod_index("Deployment", pod("a", "t"), DEPLOY) is None
    assert DEPLOYMENT.assigns_index and not DEPLOYMENT.index_without_workload
    (path,) = DEPLOYMENT.template_paths(DEPLOY)
    assert DEPLOYMENT.template_pod_count(DEPLOY, path) == 1  # Kueue: a Workload per pod
    assert DEPLOYMENT.kueue_workloads(DEPLOY) == 4


def test_new_pods_take_the_lowest_free_indices_oldest_first() -> None:
    pods = [
        pod("held", "2026-01-01T00:00:00Z", 1, gates=[]),
        pod("late", "2026-01-01T00:00:09Z"),
        pod("early", "2026-01-01T00:00:05Z"),
    ]
    assert assign_indices(pods, 4) == {"early": 0, "late": 2}
    assert assign_indices(list(reversed(pods)), 4) == {"early": 0, "late": 2}  # same answer


def test_a_deleted_or_finished_pod_frees_its_index_and_surplus_pods_wait() -> None:
    going = pod("old", "0", 0, gates=[], meta={"deletionTimestamp": "2026-01-01T00:00:00Z"})
    done = pod("done", "0", 1, gates=[], status={"phase": "Succeeded"})
    new = [pod("n1", "5"), pod("n2", "6"), pod("n3", "7")]
    assert assign_indices([going, done, *new], 2) == {"n1": 0, "n2": 1}


def test_ungated_pods_get_no_index() -> None:
    assert assign_indices([pod("free", "1", gates=[])], 2) == {}
