"""queuePolicy wait-if-faster in the operator: a job held through the AdmissionCheck while a
better placement frees up soon, and others kept off it (in-memory API server)."""

from __future__ import annotations

import copy
import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from fabricfit.api.status import rfc3339
from fabricfit.kube.rest import path_for
from fabricfit.policy.waiting import HeldPlacement
from fabricfit.reconcile.inventory import holding_of, slim_node
from fabricfit_dev.cluster import fakenodes
from unit.reconcile.test_admission import KUEUE, KueueWorld, kueue_workload, reconcile
from unit.reconcile.world import JOB_PATH, NAME, NS, World, job, topology

FABRIC = "h100-leaf-spine-2to1"
MODEL = {"parameters": 20_000_000_000, "hiddenSize": 6144, "layers": 44, "sequenceLength": 256,
         "microBatchSize": 1, "microBatches": 1, "bytesPerElement": 2}  # fmt: skip
RAIL_GROUP = "topology.fabricfit.dev/rail-group"
BLOCKER = "blocker"


def nodes() -> list[dict[str, Any]]:
    """rg-0: n0–n3, rg-1: n4–n7, one spine, the 2:1 preset."""
    fabric = fakenodes.FakeFabric(
        prefix="n", rail_groups_per_spine=2, nodes_per_rail_group=4, fabric=FABRIC
    )
    return [slim_node(fakenodes.as_ready(m)) for m in fakenodes.node_manifests(fabric)]


NODES = [n["metadata"]["name"] for n in nodes()]


def tenant(node: str) -> dict[str, Any]:
    """Another tenant's pod holding all of ``node``."""
    return {"metadata": {"namespace": "other", "name": f"t-{node}", "labels": {}},
            "spec": {"nodeName": node, "containers": [
                {"resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Running"}}  # fmt: skip


def blocker_topology() -> dict[str, Any]:
    """A running job on n0 and n1 (half of rg-0), planned and bound."""
    planned = NODES[:2]
    return {
        "metadata": {"namespace": NS, "name": BLOCKER, "generation": 1, "resourceVersion": "5"},
        "spec": {"workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": BLOCKER},
                 "gpusPerPod": 8, "parallelism": {"tensor": 8, "data": 2},
                 "placement": {"mode": "admission-check"}},
        "status": {"pods": [{"index": i, "node": n} for i, n in enumerate(planned)],
                   "reservation": [{"node": n, "gpus": 8} for n in planned],
                   "predicted": {"stepCommSeconds": 0.1}, "fabric": FABRIC},
    }  # fmt: skip


def blocker_pod(index: int) -> dict[str, Any]:
    return {"metadata": {"namespace": NS, "name": f"{BLOCKER}-{index}",
                         "labels": {"fabricfit.dev/topology": BLOCKER}},
            "spec": {"nodeName": NODES[index], "containers": [
                {"resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Running"}}  # fmt: skip


def admitted_workload(owner: str, limit: int | None, admitted_ago_seconds: float) -> Any:
    body = kueue_workload("Ready")
    body["metadata"]["name"] = f"job-{owner}"
    body["metadata"]["ownerReferences"][0]["name"] = owner
    if limit is not None:
        body["spec"]["maximumExecutionTimeSeconds"] = limit
    since = datetime.fromtimestamp(time.time() - admitted_ago_seconds, UTC)
    body["status"]["conditions"].append(
        {"type": "Admitted", "status": "True", "lastTransitionTime": rfc3339(since)}
    )
    return body


def held_world(
    *,
    policy: str = "wait-if-faster",
    pods: int = 4,
    run_seconds: int | None = 3600,
    blocker_ends: int | None = 60,
) -> KueueWorld:
    """The job to place (admission-check, ``policy``, quota reserved) next to the blocker,
    which was admitted 10 s ago with ``blocker_ends`` seconds declared; a tenant holds n4."""
    tt = topology(mode="admission-check", pods=pods, model=MODEL, fabric=FABRIC)
    tt["spec"]["placement"]["queuePolicy"] = policy
    world = KueueWorld(tt, (JOB_PATH, job(pods)))
    world.nodes = nodes()
    world.flavors = {"rg-1": {"spec": {"nodeLabels": {}}}}  # the flavor is the whole pool
    mine = kueue_workload()
    mine["spec"]["podSets"][0]["count"] = pods
    if run_seconds is not None:
        mine["spec"]["maximumExecutionTimeSeconds"] = run_seconds
    world.set_workload(mine)
    blocker = admitted_workload(BLOCKER, blocker_ends, 10.0)
    world.api.put(path_for(KUEUE, "workloads", NS, f"job-{BLOCKER}"), blocker)
    world.others = {(NS, BLOCKER): holding_of(blocker_topology())}
    world.pods += [tenant(NODES[4]), blocker_pod(0), blocker_pod(1)]
    return world


def rail_group(node: str) -> str:
    (found,) = (n for n in nodes() if n["metadata"]["name"] == node)
    return str(found["metadata"]["labels"][RAIL_GROUP]).rsplit("/", 1)[-1]


def test_a_job_whose_whole_rail_group_frees_up_soon_is_held_with_retry_and_why() -> None:
    world = held_world()
    outcome = reconcile(world)
    assert outcome.decision is None and not outcome.plan.pods
    assert world.condition("Planned") == ("Unknown", "WaitingForBetterPlacement")
    assert world.status()["summary"] == "Pending"
    assert not world.status().get("reservation")
    check = world.check()
    assert check["state"] == "Retry"
    message = check["message"]
    waited = r"fabricfit holds this job for a better placement: waiting (49|50) s for 4 pods on "
    assert re.match(waited + "spine-0/rg-0 ×4", message)  # the placement waited for
    assert "(now: spine-0/rg-1 ×3, spine-0/rg-0 ×1)" in message
    assert "step-seconds saved over its declared run of 3600 s" in message
    hold = world.state.holds[(NS, NAME)]
    assert set(hold.reserved) == set(NODES[:4]) and hold.freed == {NODES[0]: 8, NODES[1]: 8}
    assert hold.until == pytest.approx(time.time() + 50, abs=5)


@pytest.mark.parametrize(
    ("why", "world"),
    [
        ("strict-fifo", lambda: held_world(policy="strict-fifo")),
        ("the job declares no run time", lambda: held_world(run_seconds=None)),
        ("the blocker declares no end", lambda: held_world(blocker_ends=None)),
        ("the wait is not repaid", lambda: held_world(run_seconds=60)),
    ],
)  # fmt: skip
def test_no_hold_when_waiting_cannot_be_weighed_or_does_not_pay(why: str, world: Any) -> None:
    built: KueueWorld = world()
    outcome = reconcile(built)
    assert outcome.decision is not None, why
    assert {rail_group(n) for n in outcome.plan.pods} == {"rg-0", "rg-1"}  # split now
    assert built.check()["state"] == "Ready"
    assert (NS, NAME) not in built.state.holds


def test_the_hold_is_re_checked_and_the_job_placed_once_the_blocker_has_gone() -> None:
    world = held_world()
    reconcile(world)
    assert world.check()["state"] == "Retry"
    # Kueue evicts (Retry), requeues and reserves again; the blocker has ended meanwhile.
    world.others = {}
    world.pods = [p for p in world.pods if not p["metadata"]["name"].startswith(BLOCKER)]
    world.set_workload(kueue_workload(reserved=False))
    reconcile(world)
    assert world.condition("Planned") == ("Unknown", "WaitingForBetterPlacement")  # kept
    fresh = kueue_workload()
    fresh["spec"]["podSets"][0]["count"] = 4
    fresh["spec"]["maximumExecutionTimeSeconds"] = 3600
    world.set_workload(fresh)
    outcome = reconcile(world)
    assert sorted(outcome.plan.pods) == NODES[:4]  # the whole rail group it waited for
    assert world.check()["state"] == "Ready"
    assert (NS, NAME) not in world.state.holds


def backfill_world(**spec: Any) -> World:
    """A one-pod job next to a hold on n0–n3 (free now: n2, n3 and n5–n7): alone it takes the
    tightest rail group, rg-0."""
    world = KueueWorld(topology(pods=1, model=MODEL, fabric=FABRIC, **spec), (JOB_PATH, job(1)))
    world.nodes = nodes()
    world.flavors = {"rg-1": {"spec": {"nodeLabels": {}}}}
    held = copy.deepcopy(blocker_topology())
    held["metadata"]["name"] = "held"
    held["status"] = {}
    blocker = blocker_topology()
    world.others = {(NS, "held"): holding_of(held), (NS, BLOCKER): holding_of(blocker)}
    world.pods += [tenant(NODES[4]), blocker_pod(0), blocker_pod(1)]
    world.state.holds[(NS, "held")] = HeldPlacement(
        until=time.time() + 50,
        reserved={n: 8 for n in NODES[:4]},
        freed={NODES[0]: 8, NODES[1]: 8},
    )
    return world


def test_a_job_that_runs_past_the_hold_starts_only_beside_it() -> None:
    alone = backfill_world()
    alone.state.holds.clear()
    assert rail_group(reconcile(alone).plan.pods[0]) == "rg-0"  # without the hold
    world = backfill_world()
    (node,) = reconcile(world).plan.pods
    assert rail_group(node) == "rg-1"


def test_a_job_that_ends_before_the_hold_may_take_its_gpus() -> None:
    world = backfill_world(placement={"mode": "admission-check"})
    short = kueue_workload()
    short["spec"]["podSets"][0]["count"] = 1
    short["spec"]["maximumExecutionTimeSeconds"] = 20
    world.set_workload(short)
    (node,) = reconcile(world).plan.pods
    assert rail_group(node) == "rg-0"


def test_a_stale_hold_or_one_of_a_deleted_job_is_forgotten() -> None:
    world = backfill_world()
    world.state.holds[(NS, "held")] = HeldPlacement(
        until=time.time() - 1000, reserved={n: 8 for n in NODES[:4]}
    )
    world.state.holds[(NS, "gone")] = HeldPlacement(
        until=time.time() + 50, reserved={n: 8 for n in NODES[:4]}
    )
    (node,) = reconcile(world).plan.pods
    assert rail_group(node) == "rg-0" and world.state.holds == {}
