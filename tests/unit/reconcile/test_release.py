"""Nothing stranded: deleting a TrainingTopology removes fabricfit's gate from a suspended
workload's templates, leaves a running one alone, and a gated pod its workload creates later
is ungated when its TrainingTopology is gone or being deleted."""

from __future__ import annotations

import asyncio
from typing import Any

from fabricfit.api.constants import SCHEDULING_GATE
from fabricfit.kube.rest import ApiError
from fabricfit.reconcile import podevents, service
from fabricfit.render.pods import is_gated, planned_node_of
from unit.reconcile.world import JOB_PATH, TT_PATH, World, gated_pod, job, pod_path, topology

OTHER_GATE = {"name": "example.com/quota"}


def planned(world: World) -> tuple[str, ...]:
    return asyncio.run(service.reconcile(world.body(), world.state, world.views)).plan.pods


def release(world: World) -> None:
    asyncio.run(podevents.release(world.body(), world.state, world.views))


def event(world: World, pod: dict[str, Any]) -> podevents.PodEventResult:
    return asyncio.run(podevents.on_pod_event(pod, "ADDED", world.state, world.views))


def template_gates(world: World) -> list[Any]:
    spec = world.api.objects[JOB_PATH]["spec"]["template"]["spec"]
    return list(spec.get("schedulingGates") or [])


def queued_world() -> World:
    """A Job planned and gated, left suspended for Kueue to admit (a queue is named)."""
    world = World(topology(queueName="team-a"), (JOB_PATH, job()))
    planned(world)
    assert template_gates(world) == [{"name": SCHEDULING_GATE}]
    assert world.api.objects[JOB_PATH]["spec"]["suspend"] is True
    return world


def test_deleting_the_topology_of_a_suspended_job_ungates_its_template() -> None:
    world = queued_world()
    spec = world.api.objects[JOB_PATH]["spec"]["template"]["spec"]
    spec["schedulingGates"] = [OTHER_GATE, *spec["schedulingGates"]]
    release(world)
    assert template_gates(world) == [OTHER_GATE]  # only fabricfit's gate goes
    labels = world.api.objects[JOB_PATH]["spec"]["template"]["metadata"]["labels"]
    assert labels["fabricfit.dev/topology"] == "llama"  # labels do not block scheduling


def test_a_running_job_is_not_patched_on_deletion() -> None:
    world = World(topology(), (JOB_PATH, job()))
    planned(world)
    assert world.api.objects[JOB_PATH]["spec"]["suspend"] is False
    writes = len(world.api.writes_to(JOB_PATH))
    release(world)
    assert len(world.api.writes_to(JOB_PATH)) == writes
    assert template_gates(world) == [{"name": SCHEDULING_GATE}]


def test_a_refused_template_patch_does_not_stop_the_release() -> None:
    world = queued_world()
    world.api.refuse[JOB_PATH] = ApiError(422, "Invalid", "field is immutable")
    pod = world.add_pod(gated_pod(0))
    release(world)
    assert template_gates(world) == [{"name": SCHEDULING_GATE}]
    assert not is_gated(world.api.objects[pod_path(pod["metadata"]["name"])])
    assert world.state.ledger.written == {}


def test_a_gated_pod_of_a_deleted_topology_is_ungated_when_it_appears() -> None:
    world = World(topology(), (JOB_PATH, job()))
    planned(world)
    release(world)
    del world.api.objects[TT_PATH]
    pod = gated_pod(0)
    pod["spec"]["schedulingGates"] = [OTHER_GATE, {"name": SCHEDULING_GATE}]
    world.add_pod(pod)  # the Job recreates a pod from its (immutable) gated template
    assert event(world, pod) == podevents.PodEventResult()
    stored = world.api.objects[pod_path("llama-0")]
    assert stored["spec"]["schedulingGates"] == [OTHER_GATE]
    assert planned_node_of(stored) is None  # released, not pinned to the old plan


def test_a_gated_pod_of_a_topology_being_deleted_is_ungated_not_pinned() -> None:
    world = World(topology(), (JOB_PATH, job()))
    planned(world)
    world.api.objects[TT_PATH]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    world.state.ledger.forget(("team", "llama"))  # release ran, the object is still there
    pod = world.add_pod(gated_pod(1))
    event(world, pod)
    stored = world.api.objects[pod_path("llama-1")]
    assert not is_gated(stored) and planned_node_of(stored) is None


def test_a_gated_pod_of_a_topology_without_a_plan_stays_gated() -> None:
    world = World(topology(pods=16), (JOB_PATH, job(completions=16)))
    assert planned(world) == ()  # does not fit: no plan yet
    pod = world.add_pod(gated_pod(0))
    event(world, pod)
    assert is_gated(world.api.objects[pod_path("llama-0")])


def test_a_topology_naming_a_workload_in_a_foreign_api_group_is_released() -> None:
    """Its spec was wrong from the start (a Deployment in ``v1``, a Pod in ``apps/v1``):
    fabricfit never gated that workload, and the deletion does not wait on the spec."""
    for kind, api_version in (("Deployment", "v1"), ("Job", "apps/v1"), ("Pod", "apps/v1")):
        ref = {"apiVersion": api_version, "kind": kind, "name": "llama"}
        if kind == "Pod":
            ref = {**ref, "podSelector": {"app": "llama"}}
        world = World(topology(workloadRef=ref), (JOB_PATH, job()))
        release(world)  # raised UnsupportedWorkloadError, and kopf retried it every minute
        assert world.api.writes_to(JOB_PATH) == []
        assert world.state.ledger.written == {}
