"""admission-check mode against an in-memory API server: fabricfit plans only inside Kueue's
quota, on the assigned flavor's nodes, answers its check, and releases on eviction."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from fabricfit.api.constants import ADMISSION_CHECK_CONTROLLER, SCHEDULING_GATE, TOPOLOGY_LABEL
from fabricfit.kube.rest import ApiError, path_for
from fabricfit.reconcile import service, workloadevents
from fabricfit.reconcile.context import KueueViews, Views
from fabricfit.reconcile.service import Outcome
from unit.reconcile.world import JOB_PATH, NAME, NS, TT_PATH, World, job, topology

KUEUE = "kueue.x-k8s.io/v1beta2"
WL_NAME = f"job-{NAME}-abcde"
WL_PATH = path_for(KUEUE, "workloads", NS, WL_NAME)
CHECK_PATH = path_for(KUEUE, "admissionchecks", None, "fabricfit")
RAIL_GROUP = "topology.fabricfit.dev/rail-group"
NOW = "2026-12-03T12:00:00Z"


def kueue_workload(state: str = "Pending", *, reserved: bool = True) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True" if reserved else "False",
                   "reason": "QuotaReserved", "message": ""}]  # fmt: skip
    status: dict[str, Any] = {
        "conditions": conditions,
        "admissionChecks": [
            {"name": "fabricfit", "state": state, "message": "", "lastTransitionTime": NOW}
        ],
    }
    if reserved:
        status["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "rg-1"}}],
        }
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"namespace": NS, "name": WL_NAME, "ownerReferences": [
            {"apiVersion": "batch/v1", "kind": "Job", "name": NAME, "controller": True}]},
        "spec": {"podSets": [{"name": "main", "count": 2}]},
        "status": status,
    }  # fmt: skip


class KueueWorld(World):
    """The world plus Kueue's objects, indexed the way handlers.admission indexes them."""

    def __init__(self, tt: dict[str, Any], *objects: tuple[str, dict[str, Any]]) -> None:
        super().__init__(tt, *objects)
        self.flavors = {"rg-1": {"spec": {"nodeLabels": {RAIL_GROUP: "rg-1"}}}}

    def views(self) -> Views:
        views = super().views()
        workloads: dict[Any, list[Any]] = {}
        for path, found in self.api.objects.items():
            if "/workloads/" in path:
                for key, slim in (workloadevents.workload_entry(found) or {}).items():
                    workloads.setdefault(key, []).append(slim)
        views.kueue = KueueViews(
            workloads=workloads, checks=frozenset({"fabricfit"}), flavors=self.flavors
        )
        return views

    def check(self) -> dict[str, Any]:
        (entry,) = self.api.objects[WL_PATH]["status"]["admissionChecks"]
        return dict(entry)

    def set_workload(self, body: dict[str, Any]) -> None:
        self.api.put(WL_PATH, body)


def reconcile(world: World) -> Outcome:
    return asyncio.run(service.reconcile(world.body(), world.state, world.views))


def admission_world(**spec: Any) -> KueueWorld:
    return KueueWorld(topology(mode="admission-check", **spec), (JOB_PATH, job()))


def test_nothing_is_planned_or_held_before_kueue_reserves_quota() -> None:
    world = admission_world()
    reconcile(world)  # no Workload yet
    assert world.condition("Planned") == ("Unknown", "AwaitingAdmission")
    assert world.condition("Placed") == ("False", "NotAdmitted")
    world.set_workload(kueue_workload(reserved=False))
    reconcile(world)
    assert world.condition("Planned") == ("Unknown", "AwaitingAdmission")
    assert world.status()["summary"] == "Pending"
    assert not world.status().get("pods") and not world.status().get("reservation")
    assert world.api.writes_to(JOB_PATH) == [] and world.api.writes_to(WL_PATH + "/status") == []


def test_reserved_quota_is_planned_on_the_flavor_gated_and_set_ready() -> None:
    world = admission_world()
    world.set_workload(kueue_workload())
    outcome = reconcile(world)
    plan = outcome.plan
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in world.nodes}
    assert len(plan.pods) == 2 and {labels[n][RAIL_GROUP] for n in plan.pods} == {"rg-1"}
    assert world.condition("Planned") == ("True", "Planned")
    (template,) = world.api.writes_to(JOB_PATH)  # the gate, never the unsuspension: Kueue's
    assert template["spec"]["template"]["spec"]["schedulingGates"] == [{"name": SCHEDULING_GATE}]
    assert world.api.objects[JOB_PATH]["spec"]["suspend"] is True
    check = world.check()
    assert check["state"] == "Ready" and check["message"].startswith("placed by fabricfit: 2 pods")
    assert check["podSetUpdates"] == [{"name": "main", "labels": {TOPOLOGY_LABEL: NAME}}]
    # Ready is sticky and the plan is kept: another reconcile writes nothing to the Workload.
    writes = len(world.api.writes_to(WL_PATH + "/status"))
    assert reconcile(world).plan.pods == plan.pods
    assert len(world.api.writes_to(WL_PATH + "/status")) == writes


def test_ready_waits_until_the_template_carries_the_gate() -> None:
    world = admission_world()
    world.set_workload(kueue_workload())
    world.api.refuse[JOB_PATH] = ApiError(400, "BadRequest", "a webhook said no")
    reconcile(world)
    assert world.condition("Planned") == ("True", "Planned")
    assert world.check()["state"] == "Pending"


def test_a_job_that_does_not_fit_the_flavor_gets_retry_with_what_fits() -> None:
    world = admission_world(pods=5)  # 5 pods, the flavor has 4 nodes
    world.api.objects[JOB_PATH]["spec"].update(completions=5, parallelism=5)
    world.set_workload(kueue_workload())
    reconcile(world)
    assert world.condition("Planned") == ("False", "InsufficientGPUs")
    check = world.check()
    assert check["state"] == "Retry"
    assert "largest job that fits now: 4 pods, 32 GPUs" in check["message"]
    assert check["requeueAfterSeconds"] == 10
    assert not world.status().get("reservation")
    # Kueue evicts, resets the check and requeues; the same question is asked afresh.
    world.set_workload(kueue_workload(reserved=False))
    reconcile(world)
    world.set_workload(kueue_workload())
    reconcile(world)
    assert world.check()["state"] == "Retry"


def test_an_invalid_spec_is_rejected() -> None:
    world = admission_world(gpusPerPod=3)
    world.set_workload(kueue_workload())
    reconcile(world)
    assert world.condition("Planned") == ("False", "InvalidSpec")
    check = world.check()
    assert check["state"] == "Rejected" and "fabricfit cannot plan this job" in check["message"]


def test_eviction_releases_the_reservation_at_once_and_requeue_plans_afresh() -> None:
    world = admission_world()
    world.set_workload(kueue_workload())
    first = reconcile(world).plan
    assert first.reservation
    evicted = copy.deepcopy(world.api.objects[WL_PATH])
    evicted["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "Preempted",
         "message": "Preempted to accommodate a higher priority Workload"}
    )  # fmt: skip
    world.set_workload(evicted)
    outcome = reconcile(world)
    assert world.condition("Planned") == ("Unknown", "AdmissionReleased")
    planned = next(c for c in world.status()["conditions"] if c["type"] == "Planned")
    assert planned["message"] == (
        f"Kueue evicted Workload {NS}/{WL_NAME} (Preempted: Preempted to accommodate a higher "
        "priority Workload); reservation released"
    )
    assert world.status()["pods"] == [] and world.status()["reservation"] == []
    held = world.state.ledger.newest((NS, NAME), None)
    assert not outcome.plan.reservation and held is not None and not held.plan.reservation
    # Kueue finishes the eviction, requeues and reserves again: a fresh plan and Ready.
    world.set_workload(kueue_workload(reserved=False))
    reconcile(world)
    world.set_workload(kueue_workload())
    again = reconcile(world)
    assert len(again.plan.pods) == 2 and again.decision is not None
    assert world.check()["state"] == "Ready"


def test_a_workload_without_fabricfits_check_is_not_planned() -> None:
    world = admission_world()
    body = kueue_workload()
    body["status"]["admissionChecks"] = []
    world.set_workload(body)
    reconcile(world)
    assert world.condition("Planned") == ("Unknown", "AwaitingAdmission")
    message = next(c["message"] for c in world.status()["conditions"] if c["type"] == "Planned")
    assert ADMISSION_CHECK_CONTROLLER in message


def test_a_missing_flavor_is_waited_for() -> None:
    world = admission_world()
    world.flavors = {}
    world.set_workload(kueue_workload())
    reconcile(world)
    assert world.condition("Planned") == ("Unknown", "AwaitingAdmission")
    assert world.check()["state"] == "Pending"


def test_a_workload_event_reconciles_its_topology() -> None:
    world = admission_world()
    world.set_workload(kueue_workload())
    result = asyncio.run(
        workloadevents.on_workload_event(world.api.objects[WL_PATH], world.state, world.views)
    )
    assert result.topology is not None and result.outcome is not None
    assert result.outcome.plan.pods and world.check()["state"] == "Ready"


def test_a_workload_no_topology_names_stays_pending_with_a_message() -> None:
    world = admission_world()
    body = kueue_workload()
    body["metadata"]["ownerReferences"][0]["name"] = "someone-else"
    world.set_workload(body)
    result = asyncio.run(workloadevents.on_workload_event(body, world.state, world.views))
    assert result.topology is None
    check = world.check()
    assert check["state"] == "Pending"
    assert "no TrainingTopology in placement.mode admission-check names Job" in check["message"]
    assert world.api.objects[TT_PATH].get("status") is None


def test_fabricfits_admission_checks_are_activated_once() -> None:
    world = admission_world()
    check = {"apiVersion": KUEUE, "kind": "AdmissionCheck", "metadata": {"name": "fabricfit"},
             "spec": {"controllerName": ADMISSION_CHECK_CONTROLLER}}  # fmt: skip
    world.api.put(CHECK_PATH, check)
    assert asyncio.run(workloadevents.activate(world.api.objects[CHECK_PATH], world.state))
    (condition,) = world.api.objects[CHECK_PATH]["status"]["conditions"]
    assert (condition["type"], condition["status"]) == ("Active", "True")
    assert not asyncio.run(workloadevents.activate(world.api.objects[CHECK_PATH], world.state))


def test_a_topology_deleted_during_a_workload_event_is_let_go() -> None:
    world = admission_world()
    world.set_workload(kueue_workload())
    world.api.fail[TT_PATH + "/status"] = ApiError(404, "NotFound", "trainingtopologies not found")
    result = asyncio.run(
        workloadevents.on_workload_event(world.api.objects[WL_PATH], world.state, world.views)
    )
    assert result.outcome is None
