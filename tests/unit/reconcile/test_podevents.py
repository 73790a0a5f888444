"""Pod events pin from the recorded plan (or reconcile when they must); deletion releases."""

from __future__ import annotations

import asyncio
import copy

from fabricfit.reconcile import podevents, service
from fabricfit.render.pods import is_gated, planned_node_of
from unit.reconcile.world import JOB_PATH, World, gated_pod, job, pod_path, topology


def planned_world() -> tuple[World, tuple[str, ...]]:
    world = World(topology(), (JOB_PATH, job()))
    outcome = asyncio.run(service.reconcile(world.body(), world.state, world.views))
    return world, outcome.plan.pods


def event(world: World, pod: dict[str, object], kind: str = "ADDED") -> podevents.PodEventResult:
    return asyncio.run(podevents.on_pod_event(pod, kind, world.state, world.views))


def test_a_gated_pod_of_a_current_plan_is_pinned_on_the_fast_path() -> None:
    world, plan = planned_world()
    pod = gated_pod(1)
    world.add_pod(pod)
    result = event(world, pod)
    assert (result.pinned, result.outcome) == (1, None)
    stored = world.api.objects[pod_path("llama-1")]
    assert not is_gated(stored) and planned_node_of(stored) == plan[1]


def test_ungated_and_deleted_pods_need_nothing() -> None:
    world, _ = planned_world()
    pod = gated_pod(0)
    world.add_pod(pod)
    assert event(world, pod, "DELETED") == podevents.PodEventResult()
    ungated = copy.deepcopy(pod)
    ungated["spec"]["schedulingGates"] = []
    assert event(world, ungated) == podevents.PodEventResult()


def test_a_pod_whose_planned_node_is_gone_falls_back_to_a_reconcile() -> None:
    world, plan = planned_world()
    running = gated_pod(1)
    running["spec"] = {**running["spec"], "schedulingGates": [], "nodeName": plan[1]}
    world.add_pod(running)  # the job has started: only the lost pod may move
    world.nodes = [n for n in world.nodes if n["metadata"]["name"] != plan[0]]
    world.state.snapshots.clear()  # the node vanished: no cached snapshot may hide it
    pod = gated_pod(0)
    world.add_pod(pod)
    result = event(world, pod)
    assert result.outcome is not None and result.topology is not None
    assert result.topology["metadata"]["name"] == "llama"
    moved = result.outcome.plan.pods
    assert moved[0] != plan[0] and moved[1] == plan[1]
    assert planned_node_of(world.api.objects[pod_path("llama-0")]) == moved[0]


def test_release_forgets_the_reservation_and_ungates_pods() -> None:
    world, _ = planned_world()
    pod = gated_pod(0)
    world.add_pod(pod)
    asyncio.run(podevents.release(world.body(), world.state, world.views))
    assert not is_gated(world.api.objects[pod_path("llama-0")])
    assert world.state.ledger.written == {} and world.state.object_locks == {}
