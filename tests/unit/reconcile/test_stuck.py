"""A pinned pod kube-scheduler calls Unschedulable because a pod fabricfit does not place took
its node's GPUs: the plan moves it (the rest of the job stays), the stuck pod is deleted so its
controller recreates it gated, and the new pod is pinned to the new node."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.reconcile import service
from fabricfit.reconcile.applying import recreate_stuck
from fabricfit.render.pods import is_gated, planned_node_of
from fabricfit.render.record import read_plan
from unit.reconcile.world import JOB_PATH, NAME, NS, World, gated_pod, job, pod_path, topology

UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


def reconcile(world: World) -> service.Outcome:
    world.state.snapshots.clear()  # pods changed: no cached snapshot
    return asyncio.run(service.reconcile(world.body(), world.state, world.views))


def refresh(world: World) -> None:
    """The watch: our pods as the API server now stores them (deleted ones drop out)."""
    kept = []
    for pod in world.pods:
        if TOPOLOGY_LABEL in pod["metadata"].get("labels", {}):
            stored = world.api.objects.get(pod_path(pod["metadata"]["name"]))
            if stored is None:
                continue
            pod.clear()
            pod.update(copy.deepcopy(stored))
        kept.append(pod)
    world.pods = kept


def foreign(node: str, gpus: int = 8, name: str = "tenant") -> dict[str, Any]:
    """A pod fabricfit does not place, bound to ``node`` by kube-scheduler."""
    return {
        "metadata": {"namespace": "other", "name": name, "uid": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": "Running"},
    }


def stick(world: World, index: int) -> None:
    """kube-scheduler finds no room for pinned pod ``index``."""
    path = pod_path(f"{NAME}-{index}")
    world.api.objects[path]["status"] = {"phase": "Pending", "conditions": [UNSCHEDULABLE]}
    refresh(world)


def bind(world: World, index: int) -> None:
    """kube-scheduler binds pinned pod ``index`` to its pinned node."""
    stored = world.api.objects[pod_path(f"{NAME}-{index}")]
    node = planned_node_of(stored)
    assert node is not None and not is_gated(stored)
    stored["spec"]["nodeName"] = node
    stored["status"] = {"phase": "Running"}
    refresh(world)


def pinned_world(pods: int = 2) -> tuple[World, tuple[str, ...]]:
    world = World(topology(pods=pods), (JOB_PATH, job(completions=pods)))
    plan = reconcile(world).plan.pods
    for index in range(pods):
        world.add_pod(gated_pod(index))
    assert reconcile(world).pinned == pods
    refresh(world)
    return world, plan


def placed_reason(world: World) -> tuple[str, str, str]:
    for c in world.status()["conditions"]:
        if c["type"] == "Placed":
            return c["status"], c["reason"], c["message"]
    raise AssertionError("no Placed condition")


def test_a_pod_whose_gpus_a_foreign_pod_took_is_replanned_and_recreated() -> None:
    world, plan = pinned_world()
    bind(world, 1)
    world.pods.append(foreign(plan[0]))
    stick(world, 0)
    outcome = reconcile(world)

    moved = read_plan(world.status())
    assert moved.pods[1] == plan[1] and moved.pods[0] not in (plan[0], plan[1])
    assert moved.reservation == {moved.pods[0]: 8, plan[1]: 8}
    assert pod_path(f"{NAME}-0") not in world.api.objects  # deleted: its Job recreates it
    assert pod_path(f"{NAME}-1") in world.api.objects
    (deleted,) = [body for path, kind, body in world.api.writes if kind == "delete"]
    assert set(deleted["preconditions"]) == {"uid", "resourceVersion"}
    status, reason, message = placed_reason(world)
    assert (status, reason) == ("False", "PodsUnschedulable")
    assert f"pod 0 (ranks 0..7) on {plan[0]}: re-placed to {moved.pods[0]}" in message
    assert Reason.PODS_UNSCHEDULABLE in [t.reason for t in outcome.transitions]

    # The Job recreates index 0 from its gated template: pinned to the new node, then bound.
    refresh(world)
    world.add_pod(gated_pod(0))
    reconcile(world)
    refresh(world)
    assert planned_node_of(world.api.objects[pod_path(f"{NAME}-0")]) == moved.pods[0]
    bind(world, 0)
    reconcile(world)
    assert placed_reason(world)[:2] == ("True", "AllPodsBound")


def test_a_pod_whose_node_still_has_room_is_left_to_kube_scheduler() -> None:
    world, plan = pinned_world()
    stick(world, 0)  # e.g. the scheduler's cache lagged: the node still has its GPUs free
    reconcile(world)
    assert read_plan(world.status()).pods == plan
    assert not [w for w in world.api.writes if w[1] == "delete"]
    status, reason, message = placed_reason(world)
    assert (status, reason) == ("False", "PodsUnschedulable")
    assert f"pod 0 (ranks 0..7) on {plan[0]}: kept there" in message


def test_a_pod_waiting_for_its_own_predecessor_to_terminate_is_not_moved() -> None:
    world, plan = pinned_world()
    old = foreign(plan[0], name=f"{NAME}-0-old")
    old["metadata"].update(namespace=NS, deletionTimestamp="2026-01-01T00:00:00Z")
    world.pods.append(old)
    stick(world, 0)
    reconcile(world)
    assert read_plan(world.status()).pods == plan
    assert pod_path(f"{NAME}-0") in world.api.objects


def test_with_no_other_node_free_the_pod_waits_where_it_is() -> None:
    world, plan = pinned_world()
    others = [n["metadata"]["name"] for n in world.nodes if n["metadata"]["name"] not in plan]
    world.pods += [foreign(n, name=f"tenant-{n}") for n in [plan[0], *others]]
    stick(world, 0)
    reconcile(world)
    assert read_plan(world.status()).pods == plan
    assert pod_path(f"{NAME}-0") in world.api.objects
    assert placed_reason(world)[1] == "PodsUnschedulable"


def test_plain_pods_are_never_deleted() -> None:
    tt = topology(pods=2)
    tt["spec"]["workloadRef"] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "podSelector": {"app": "x"},
        "indexLabel": "rank",
    }
    world = World(tt)
    pods = []
    for index in range(2):
        pod = gated_pod(index)
        pod["metadata"]["labels"].update(app="x", rank=str(index))
        pods.append(world.add_pod(pod))
    plan = reconcile(world).plan.pods
    reconcile(world)
    refresh(world)
    world.pods.append(foreign(plan[0]))
    stick(world, 0)
    reconcile(world)
    assert pod_path(f"{NAME}-0") in world.api.objects
    assert read_plan(world.status()).pods == plan


def test_a_pod_bound_since_the_views_were_taken_is_not_deleted() -> None:
    world, plan = pinned_world()
    stick(world, 0)
    seen = next(p for p in world.pods if p["metadata"]["name"] == f"{NAME}-0")
    stored = world.api.objects[pod_path(f"{NAME}-0")]
    stored["spec"]["nodeName"] = plan[0]  # kube-scheduler bound it after all
    assert asyncio.run(recreate_stuck(world.api, [seen])) == []  # type: ignore[arg-type]
    assert pod_path(f"{NAME}-0") in world.api.objects
    del stored["spec"]["nodeName"]
    assert asyncio.run(recreate_stuck(world.api, [seen])) == [f"{NAME}-0"]  # type: ignore[arg-type]
