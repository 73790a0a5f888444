"""A served model on a Deployment: fabricfit gives each gated pod a plan index as it pins it,
gives the same again while the watch lags, and a deleted pod's index goes to the pod that
replaces it."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from fabricfit.api.constants import POD_INDEX_LABEL, SCHEDULING_GATE, TOPOLOGY_LABEL
from fabricfit.kube.rest import path_for
from fabricfit.reconcile import service
from fabricfit.reconcile.service import Outcome
from fabricfit.render.pods import is_gated, planned_node_of
from unit.reconcile.world import NAME, NS, World, pod_path, topology

DEPLOY_PATH = path_for("apps/v1", "deployments", NS, NAME)
SERVING = {"decodeBatch": 16, "promptTokens": 1024}


def deployment(replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"namespace": NS, "name": NAME},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {TOPOLOGY_LABEL: NAME}},
                "spec": {
                    "schedulingGates": [{"name": SCHEDULING_GATE}],
                    "containers": [{"name": "t", "image": "t"}],
                },
            },
        },
    }


def replica_pod(name: str, created: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": NS,
            "name": name,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "labels": {TOPOLOGY_LABEL: NAME},
        },
        "spec": {
            "schedulingGates": [{"name": SCHEDULING_GATE}],
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        },
        "status": {"phase": "Pending"},
    }


def world() -> World:
    tt = topology(serving=SERVING)
    tt["spec"]["workloadRef"] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME}
    return World(tt, (DEPLOY_PATH, deployment()))


def reconcile(w: World) -> Outcome:
    return asyncio.run(service.reconcile(w.body(), w.state, w.views))


def refresh(w: World) -> None:
    """The watch catches up: the pods as the API server now stores them."""
    for pod in w.pods:
        stored = copy.deepcopy(w.api.objects[pod_path(pod["metadata"]["name"])])
        pod.clear()
        pod.update(stored)


def test_pods_get_the_plan_indices_in_the_order_they_appeared() -> None:
    w = world()
    plan = reconcile(w).plan.pods
    assert len(plan) == 2
    w.add_pod(replica_pod("web-b", "2026-01-01T00:00:02Z"))
    w.add_pod(replica_pod("web-a", "2026-01-01T00:00:01Z"))
    assert reconcile(w).pinned == 2
    for name, index in (("web-a", 0), ("web-b", 1)):
        stored = w.api.objects[pod_path(name)]
        assert stored["metadata"]["labels"][POD_INDEX_LABEL] == str(index)
        assert planned_node_of(stored) == plan[index] and not is_gated(stored)


def test_a_lagging_watch_changes_nothing_and_a_deleted_pods_index_is_reused() -> None:
    w = world()
    plan = reconcile(w).plan.pods
    w.add_pod(replica_pod("web-a", "1"))
    w.add_pod(replica_pod("web-b", "2"))
    reconcile(w)  # pins both; the views still show them unlabelled and gated
    w.add_pod(replica_pod("web-c", "3"))
    assert reconcile(w).pinned == 0  # no free index: web-c waits, gated
    assert is_gated(w.api.objects[pod_path("web-c")])
    refresh(w)
    w.pods[0]["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"  # web-a is going
    assert reconcile(w).pinned == 1
    stored = w.api.objects[pod_path("web-c")]
    assert stored["metadata"]["labels"][POD_INDEX_LABEL] == "0"
    assert planned_node_of(stored) == plan[0]
