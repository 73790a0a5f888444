"""admission-check mode for a job Kueue admits in parts: a LeaderWorkerSet, one Workload per
group. fabricfit plans only once every group holds quota, answers every group's check alike,
never patches the (frozen) templates, pins pods only once every check is Ready, releases the
plan when any group loses its quota, and gives back a group's quota when its siblings cannot
be fitted."""

from __future__ import annotations

import asyncio
import copy
from datetime import UTC, datetime
from typing import Any

from fabricfit.api.constants import (
    KUEUE_COMPONENT_INDEX_ANNOTATION,
    KUEUE_JOB_OWNER_GVK_ANNOTATION,
    KUEUE_JOB_OWNER_NAME_ANNOTATION,
    KUEUE_QUEUE_LABEL,
    LWS_GROUP_INDEX_LABEL,
    LWS_WORKER_INDEX_LABEL,
    SCHEDULING_GATE,
    TOPOLOGY_LABEL,
)
from fabricfit.api.status import rfc3339
from fabricfit.kube.rest import path_for
from fabricfit.reconcile import service
from fabricfit.reconcile.service import Outcome
from fabricfit.render.pods import planned_node_of
from unit.reconcile.test_admission import KUEUE, RAIL_GROUP, KueueWorld
from unit.reconcile.world import NAME, NS, World, topology

LWS_API = "leaderworkerset.x-k8s.io/v1"
LWS_PATH = path_for(LWS_API, "leaderworkersets", NS, NAME)
KUEUE_GATE = "kueue.x-k8s.io/admission"
GROUPS, SIZE = 2, 2
LONG_AGO = "2026-12-03T11:00:00Z"


def lws(*, gated: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "t", "image": "t",
                            "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}  # fmt: skip
    if gated:
        spec["schedulingGates"] = [{"name": SCHEDULING_GATE}]
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"namespace": NS, "name": NAME, "labels": {KUEUE_QUEUE_LABEL: "team"}},
        "spec": {
            "replicas": GROUPS,
            "leaderWorkerTemplate": {
                "size": SIZE,
                "leaderTemplate": {"spec": copy.deepcopy(spec)},
                "workerTemplate": {"spec": spec},
            },
        },
    }


def wl_path(group: int) -> str:
    return path_for(KUEUE, "workloads", NS, f"leaderworkerset-{NAME}-{group}-abcde")


def group_workload(
    group: int, state: str = "Pending", *, reserved: bool = True, since: str | None = None
) -> dict[str, Any]:
    """Group ``group``'s Workload; its check changed state ``since`` (default: just now)."""
    since = since or rfc3339(datetime.now(UTC))
    condition = {
        "type": "QuotaReserved",
        "status": "True" if reserved else "False",
        "reason": "QuotaReserved" if reserved else "Pending",
        "message": "" if reserved else "couldn't assign flavors: insufficient quota",
    }
    status: dict[str, Any] = {
        "conditions": [condition],
        "admissionChecks": [{"name": "fabricfit", "state": state, "message": "",
                             "lastTransitionTime": since}],
    }  # fmt: skip
    if reserved:
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": [
            {"name": "leader", "flavors": {"nvidia.com/gpu": "rg-1"}},
            {"name": "worker", "flavors": {"nvidia.com/gpu": "rg-1"}}]}  # fmt: skip
    return {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "namespace": NS,
            "name": wl_path(group).rsplit("/", 1)[1],
            # Kueue owns a group's Workload by a plain reference and names the job in annotations.
            "ownerReferences": [{"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": NAME}],
            "annotations": {
                KUEUE_JOB_OWNER_GVK_ANNOTATION: f"{LWS_API}, Kind=LeaderWorkerSet",
                KUEUE_JOB_OWNER_NAME_ANNOTATION: NAME,
                KUEUE_COMPONENT_INDEX_ANNOTATION: str(group),
            },
        },
        "spec": {"podSets": [{"name": "leader", "count": 1}, {"name": "worker", "count": 1}]},
        "status": status,
    }


def lws_world(*, gated: bool = True) -> KueueWorld:
    tt = topology(mode="admission-check", pods=GROUPS * SIZE)
    tt["spec"]["workloadRef"] = {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": NAME}
    return KueueWorld(tt, (LWS_PATH, lws(gated=gated)))


def reconcile(world: World) -> Outcome:
    return asyncio.run(service.reconcile(world.body(), world.state, world.views))


def check(world: World, group: int) -> dict[str, Any]:
    (entry,) = world.api.objects[wl_path(group)]["status"]["admissionChecks"]
    return dict(entry)


def admitted_pod(group: int, worker: int) -> dict[str, Any]:
    """A pod of the group as Kueue releases it: the check's label on, Kueue's gate off."""
    return {
        "metadata": {
            "namespace": NS, "name": f"{NAME}-{group}-{worker}", "uid": f"p{group}{worker}",
            "labels": {TOPOLOGY_LABEL: NAME, LWS_GROUP_INDEX_LABEL: str(group),
                       LWS_WORKER_INDEX_LABEL: str(worker)},
        },
        "spec": {"schedulingGates": [{"name": SCHEDULING_GATE}],
                 "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
        "status": {"phase": "Pending"},
    }  # fmt: skip


def test_one_group_with_quota_is_not_planned_and_its_check_says_why() -> None:
    world = lws_world()
    world.api.put(wl_path(0), group_workload(0))
    reconcile(world)
    assert world.condition("Planned") == ("Unknown", "AwaitingAdmission")
    assert not world.status().get("reservation")
    # Kueue has not made group 1's Workload yet: group 0's check stays Pending and says why.
    assert check(world, 0)["state"] == "Pending"
    assert "component(s) 1 (1 of 2 made)" in check(world, 0)["message"]
    world.api.put(wl_path(1), group_workload(1, reserved=False))
    reconcile(world)
    assert world.condition("Planned") == ("Unknown", "AwaitingAdmission")
    assert "groups together (1 of 2 hold quota)" in check(world, 0)["message"]
    assert check(world, 0)["state"] == "Pending" and check(world, 1)["message"] == ""


def test_every_group_with_quota_is_planned_once_and_every_check_set_ready() -> None:
    world = lws_world()
    for group in range(GROUPS):
        world.api.put(wl_path(group), group_workload(group))
    outcome = reconcile(world)
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in world.nodes}
    assert len(outcome.plan.pods) == 4
    assert {labels[n][RAIL_GROUP] for n in outcome.plan.pods} == {"rg-1"}
    for group in range(GROUPS):
        entry = check(world, group)
        assert entry["state"] == "Ready" and entry["message"].startswith("placed by fabricfit")
        assert entry["podSetUpdates"] == [
            {"name": "leader", "labels": {TOPOLOGY_LABEL: NAME}},
            {"name": "worker", "labels": {TOPOLOGY_LABEL: NAME}},
        ]
    # The queued LeaderWorkerSet is never patched: a template change would roll its groups.
    assert world.api.writes_to(LWS_PATH) == []


def test_pods_are_pinned_only_once_every_check_is_ready() -> None:
    world = lws_world()
    for group in range(GROUPS):
        world.api.put(wl_path(group), group_workload(group))
    pod = world.add_pod(admitted_pod(0, 1))  # labelled early (by hand): not pinned before Ready
    plan = reconcile(world).plan.pods
    assert world.api.writes_to(path_for("v1", "pods", NS, pod["metadata"]["name"])) == []
    for group in range(GROUPS):  # Kueue saw Ready on both and admitted them
        world.api.put(wl_path(group), group_workload(group, "Ready"))
    pods = [world.add_pod(admitted_pod(g, w)) for g in range(GROUPS) for w in range(SIZE) if
            (g, w) != (0, 1)]  # fmt: skip
    reconcile(world)
    pinned = {}
    for found in [pod, *pods]:
        stored = world.api.objects[path_for("v1", "pods", NS, found["metadata"]["name"])]
        assert not stored["spec"].get("schedulingGates")
        labels = found["metadata"]["labels"]
        index = int(labels[LWS_GROUP_INDEX_LABEL]) * SIZE + int(labels[LWS_WORKER_INDEX_LABEL])
        pinned[index] = planned_node_of(stored)
    assert pinned == dict(enumerate(plan))


def test_one_group_losing_its_quota_releases_the_whole_plan() -> None:
    world = lws_world()
    for group in range(GROUPS):
        world.api.put(wl_path(group), group_workload(group))
    assert reconcile(world).plan.reservation
    evicted = group_workload(1, "Ready")
    evicted["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "by a higher one"}
    )
    world.api.put(wl_path(1), evicted)
    reconcile(world)
    assert world.condition("Planned") == ("Unknown", "AdmissionReleased")
    assert world.status()["pods"] == [] and world.status()["reservation"] == []


def test_a_group_holding_quota_its_siblings_cannot_get_gives_it_back() -> None:
    world = lws_world()
    world.api.put(wl_path(0), group_workload(0, since=LONG_AGO))
    world.api.put(wl_path(1), group_workload(1, reserved=False))
    reconcile(world)
    entry = check(world, 0)
    assert entry["state"] == "Retry" and entry["requeueAfterSeconds"] == 10
    assert "could not reserve quota for component 1" in entry["message"]
    assert "insufficient quota" in entry["message"]
    assert not world.status().get("reservation")


def test_a_lws_created_without_the_gate_is_rejected_with_what_to_do() -> None:
    world = lws_world(gated=False)
    for group in range(GROUPS):
        world.api.put(wl_path(group), group_workload(group))
    reconcile(world)
    assert world.condition("Planned") == ("False", "UnsupportedWorkload")
    for group in range(GROUPS):
        entry = check(world, group)
        assert entry["state"] == "Rejected"
        assert f"must be created with the scheduling gate {SCHEDULING_GATE}" in entry["message"]
    assert world.api.writes_to(LWS_PATH) == [] and not world.status().get("reservation")
