"""One reconcile against an in-memory API server: plan, reserve, apply, pin, evaluate."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fabricfit.api.conditions import ConditionType, Reason
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.kube.rest import ApiError
from fabricfit.placement.constraints import inputs_digest
from fabricfit.reconcile import service
from fabricfit.reconcile.context import Target
from fabricfit.reconcile.planning import fresh_snapshot
from fabricfit.reconcile.service import Outcome, PlanStep, decide_intent, decide_plan
from fabricfit.render.pods import is_gated, planned_node_of
from fabricfit.render.record import PlanRecord
from unit.reconcile.world import (
    JOB_PATH,
    TT_PATH,
    World,
    gated_pod,
    job,
    pod_path,
    target_of,
    topology,
)


def reconcile(world: World) -> Outcome:
    return asyncio.run(service.reconcile(world.body(), world.state, world.views))


def reasons(outcome: Outcome) -> list[Reason]:
    """The plan's condition changes (TopologyDetected is about the cluster, tested elsewhere)."""
    return [
        t.reason
        for t in outcome.transitions
        if t.reason.condition is not ConditionType.TOPOLOGY_DETECTED
    ]


def test_an_invalid_spec_is_reported_and_nothing_is_planned() -> None:
    world = World(topology(gpusPerPod=3))
    outcome = reconcile(world)
    assert reasons(outcome) == [Reason.INVALID_SPEC]
    assert world.condition("Planned") == ("False", "InvalidSpec")
    assert world.status()["summary"] == "Invalid"
    assert outcome.spec is None and outcome.decision is None and not outcome.plan.pods


def test_a_suspended_job_is_planned_reserved_gated_and_started() -> None:
    world = World(topology(), (JOB_PATH, job()))
    outcome = reconcile(world)
    assert outcome.decision is not None and outcome.spec is not None
    assert reasons(outcome)[0] is Reason.PLANNED
    plan = outcome.plan
    assert len(plan.pods) == 2 and sum(plan.reservation.values()) == 16
    # The reservation is written before the workload is touched.
    first_write = world.api.writes[0]
    assert first_write[0] == TT_PATH + "/status" and first_write[2]["status"]["reservation"]
    template, suspend = world.api.writes_to(JOB_PATH)
    assert template["spec"]["template"]["spec"]["schedulingGates"] == [
        {"name": "fabricfit.dev/placement"}
    ]
    assert suspend == {"spec": {"suspend": False}}
    assert world.condition("Placed") == ("False", "WaitingForPods")


def test_a_second_reconcile_reuses_the_plan_and_writes_nothing() -> None:
    world = World(topology(), (JOB_PATH, job()))
    first = reconcile(world)
    writes = len(world.api.writes)
    again = reconcile(world)
    assert again.decision is None and again.transitions == ()
    assert again.plan.pods == first.plan.pods
    assert len(world.api.writes) == writes


def test_a_missing_workload_still_holds_its_gpus() -> None:
    world = World(topology())
    outcome = reconcile(world)
    assert reasons(outcome) == [Reason.PLANNED, Reason.WORKLOAD_NOT_FOUND]
    assert sum(outcome.plan.reservation.values()) == 16


def test_a_finished_job_releases_its_plan_and_is_never_planned_again() -> None:
    world = World(topology(), (JOB_PATH, job()))
    planned = reconcile(world).plan
    assert planned.pods and planned.reservation
    done = dict(world.api.objects[JOB_PATH])
    done["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    world.api.put(JOB_PATH, done)
    outcome = reconcile(world)
    assert reasons(outcome) == [Reason.WORKLOAD_FINISHED]
    assert not outcome.plan.pods and not outcome.plan.reservation
    assert world.status()["summary"] == "Finished"
    assert "Complete" in next(
        c["message"] for c in world.status()["conditions"] if c["type"] == "Placed"
    )
    again = reconcile(world)
    assert again.decision is None and not again.plan.pods


def test_a_started_job_that_refuses_the_template_is_reported() -> None:
    world = World(topology(), (JOB_PATH, job(suspend=False)))
    world.api.fail[JOB_PATH] = ApiError(422, "Invalid", "field is immutable")
    outcome = reconcile(world)
    assert Reason.WORKLOAD_NOT_SUSPENDED in reasons(outcome)
    assert Reason.WORKLOAD_NOT_SUSPENDED.severity.value == "Warning"


def test_gated_pods_are_pinned_to_their_planned_nodes_and_placed_follows_binding() -> None:
    world = World(topology(), (JOB_PATH, job()))
    plan = reconcile(world).plan.pods
    for index in range(2):
        world.add_pod(gated_pod(index))
    outcome = reconcile(world)
    assert outcome.pinned == 2
    for index in range(2):
        pod = world.api.objects[pod_path(f"llama-{index}")]
        assert not is_gated(pod) and planned_node_of(pod) == plan[index]
    for index, pod in enumerate(world.pods):
        pod.update(world.api.objects[pod_path(f"llama-{index}")])
        pod["spec"]["nodeName"] = plan[index]
    placed = reconcile(world)
    assert Reason.ALL_PODS_BOUND in reasons(placed)
    assert world.status()["summary"] == "Placed"


def test_a_job_that_does_not_fit_waits_and_is_not_planned_again() -> None:
    world = World(topology(pods=16), (JOB_PATH, job(completions=16)))
    outcome = reconcile(world)
    assert reasons(outcome) == [Reason.INSUFFICIENT_GPUS]
    assert world.status()["summary"] == "Waiting"
    writes = len(world.api.writes)
    assert reconcile(world).transitions == () and len(world.api.writes) == writes


@pytest.mark.parametrize("mode", ["advisory", "kueue-tas"])
def test_modes_that_do_not_pin(mode: str) -> None:
    world = World(topology(mode=mode), (JOB_PATH, job()))
    outcome = reconcile(world)
    assert outcome.pinned == 0
    if mode == "advisory":
        assert world.api.writes_to(JOB_PATH) == []
        assert world.condition("Placed") == ("False", "Advisory")
    else:
        (patch,) = world.api.writes_to(JOB_PATH)
        annotations = patch["spec"]["template"]["metadata"]["annotations"]
        assert any(k.startswith("kueue.x-k8s.io/podset-") for k in annotations)


def _target(pods: list[dict[str, Any]], n: int = 2) -> Target:
    spec = TrainingTopologySpec.model_validate(topology(pods=n)["spec"])
    return target_of(spec, job(n), None, tuple(pods))


def test_decide_plan_keeps_started_jobs_and_rechecks_current_plans() -> None:
    record = PlanRecord(pods=("a", "b"), generation=1)
    bound = {**gated_pod(0), "spec": {"nodeName": "a"}}
    assert decide_plan(record, _target([bound]), 1) is PlanStep.KEEP
    assert decide_plan(record, _target([gated_pod(0)]), 1) is PlanStep.RECHECK
    assert decide_plan(record, _target([]), 2) is PlanStep.PLAN  # the spec changed
    assert decide_plan(PlanRecord(pods=("a",), generation=1), _target([]), 1) is PlanStep.PLAN
    assert decide_plan(PlanRecord(), _target([bound]), 1) is PlanStep.PLAN


def test_a_plan_made_on_other_constraints_is_made_again() -> None:
    """A plan made while the workload was absent (no nodeSelector yet) is not kept once the
    template says where its pods may run; a plan with no digest (older operator) is."""
    target = _target([gated_pod(0)])
    same = inputs_digest(target.request)
    assert decide_plan(PlanRecord(pods=("a", "b"), generation=1, inputs=same), target, 1) is (
        PlanStep.RECHECK
    )
    assert decide_plan(PlanRecord(pods=("a", "b"), generation=1, inputs="0" * 16), target, 1) is (
        PlanStep.PLAN
    )
    assert decide_plan(PlanRecord(pods=("a", "b"), generation=1), target, 1) is PlanStep.RECHECK


def test_a_plan_made_before_its_workload_follows_the_templates_node_selector() -> None:
    world = World(topology())  # no Job yet: planned on every node, reserved
    reconcile(world)
    first = world.status()["pods"]
    assert world.status()["planInputs"]
    pool = {n["metadata"]["name"]: n for n in world.nodes}
    chosen = sorted({p["node"] for p in first})
    elsewhere = [n for n in sorted(pool) if n not in chosen][:2]
    for name in elsewhere:
        pool[name]["metadata"].setdefault("labels", {})["team"] = "b"
    body = job()
    body["spec"]["template"]["spec"]["nodeSelector"] = {"team": "b"}
    world.api.put(JOB_PATH, body)
    reconcile(world)
    assert sorted({p["node"] for p in world.status()["pods"]}) == elsewhere


def test_decide_intent_names_the_rail_group_key_and_kueue_levels_only_in_kueue_mode() -> None:
    world = World(topology())
    snapshot = fresh_snapshot(world.state, world.views(), "native")
    plan = (snapshot.nodes[0].name, snapshot.nodes[1].name)
    pinned = decide_intent(_target([]), plan, snapshot, "native")
    assert pinned.rail_group_key == "topology.fabricfit.dev/rail-group"
    assert pinned.kueue_annotations == {}
    spec = TrainingTopologySpec.model_validate(topology(mode="kueue-tas")["spec"])
    kueue = decide_intent(target_of(spec, None, None, ()), plan, snapshot, "native")
    assert kueue.kueue_annotations


def test_an_advisory_plan_reserves_nothing() -> None:
    """Advisory mode reports a plan; the scheduler places the pods wherever it likes, so other
    plans must not be kept off the GPUs the report names."""
    world = World(topology(mode="advisory"), (JOB_PATH, job()))
    outcome = reconcile(world)
    assert len(outcome.plan.pods) == 2
    assert outcome.plan.reservation == {}
    pinned = World(topology(mode="pinned"), (JOB_PATH, job()))
    assert sum(reconcile(pinned).plan.reservation.values()) == 16
