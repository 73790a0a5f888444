"""A node of a placed job enters maintenance: its ranks are re-placed onto spares of the rack at
once, Degraded says they wait to move, and the pods the drain recreates are pinned there."""

from __future__ import annotations

import asyncio
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.api.constants import JOB_COMPLETION_INDEX_LABEL, SCHEDULING_GATE, TOPOLOGY_LABEL
from fabricfit.reconcile import service
from fabricfit.reconcile.inventory import slim_node
from fabricfit.render.pods import is_gated, planned_node_of
from fabricfit.render.record import read_plan
from fabricfit_dev.cluster import fakenodes
from unit.reconcile.world import JOB_PATH, NAME, NS, World, job, pod_path, topology

TRAYS = 6  # one rack; 4 trays for the job, the last 2 are its spares
SPARES = ("t-s0-g0-n0004", "t-s0-g0-n0005")


def trays() -> list[dict[str, Any]]:
    fabric = fakenodes.FakeFabric(
        prefix="t",
        rail_groups_per_spine=1,
        nodes_per_rail_group=TRAYS,
        nodes_per_rack=TRAYS,
        nvlink_domain_nodes=TRAYS,
        gpus_per_node=4,
        nics_per_node=4,
        fabric="gb200-nvl72",
    )
    ready = [{"type": "Ready", "status": "True"}]
    return [
        slim_node({**m, "status": {**m["status"], "conditions": ready}})
        for m in fakenodes.node_manifests(fabric)
    ]


def tray_pod(index: int, uid: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": NS,
            "name": f"{NAME}-{index}-{uid}",
            "uid": uid,
            "labels": {TOPOLOGY_LABEL: NAME, JOB_COMPLETION_INDEX_LABEL: str(index)},
        },
        "spec": {
            "schedulingGates": [{"name": SCHEDULING_GATE}],
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "4"}}}],
        },
        "status": {"phase": "Pending"},
    }


class Rack:
    """The world of test_service on one NVL72-like rack of 4-GPU trays."""

    def __init__(self) -> None:
        tt = topology(gpusPerPod=4, parallelism={"tensor": 8, "data": 2})
        tt["spec"]["placement"]["spares"] = {"nodesPerNvlinkDomain": 2}
        self.world = World(tt, (JOB_PATH, job(completions=4)))
        self.world.nodes = trays()

    def reconcile(self) -> service.Outcome:
        self.world.state.snapshots.clear()  # a node changed: no cached snapshot
        world = self.world
        return asyncio.run(service.reconcile(world.body(), world.state, world.views))

    def create(self, index: int, uid: str) -> dict[str, Any]:
        return self.world.add_pod(tray_pod(index, uid))

    def bind_pinned(self) -> None:
        """kube-scheduler: every pinned, ungated pod binds to its pinned node."""
        for pod in self.world.pods:
            pod.update(self.world.api.objects[pod_path(pod["metadata"]["name"])])
            node = planned_node_of(pod)
            if not is_gated(pod) and node and not pod["spec"].get("nodeName"):
                pod["spec"]["nodeName"] = node
                pod["status"] = {"phase": "Running"}

    def evict(self, index: int, uid: str) -> None:
        """The drain evicts pod ``index``; the Job recreates it, gated, as ``uid``."""
        label = JOB_COMPLETION_INDEX_LABEL
        self.world.pods = [
            p for p in self.world.pods if p["metadata"]["labels"][label] != str(index)
        ]
        self.create(index, uid)

    def node(self, name: str) -> dict[str, Any]:
        return next(n for n in self.world.nodes if n["metadata"]["name"] == name)

    def degraded(self) -> tuple[str, str, str]:
        for c in self.world.status()["conditions"]:
            if c["type"] == "Degraded":
                return c["status"], c["reason"], c["message"]
        raise AssertionError("no Degraded condition")


def placed_rack() -> tuple[Rack, tuple[str, ...]]:
    rack = Rack()
    plan = rack.reconcile().plan.pods
    assert len(plan) == 4 and not set(plan) & set(SPARES)
    for index in range(4):
        rack.create(index, f"u{index}")
    rack.reconcile()
    rack.bind_pinned()
    assert rack.reconcile().plan.pods == plan
    assert rack.world.condition("Placed") == ("True", "AllPodsBound")
    assert rack.world.status()["spares"] == {
        "perNvlinkDomain": 2,
        "source": "spec.placement.spares",
        "nodes": list(SPARES),
    }
    return rack, plan


def test_a_cordoned_tray_is_drained_onto_a_spare_of_its_rack() -> None:
    rack, plan = placed_rack()
    rack.node(plan[1])["spec"]["unschedulable"] = True
    outcome = rack.reconcile()
    moved = read_plan(rack.world.status()).pods
    assert moved[1] in SPARES and moved[:1] + moved[2:] == plan[:1] + plan[2:]
    assert sum(read_plan(rack.world.status()).reservation.values()) == 16
    assert rack.world.status()["spares"]["nodes"] == [s for s in SPARES if s != moved[1]]
    status, reason, message = rack.degraded()
    assert (status, reason) == ("True", "NodeMaintenance")
    assert f"ranks 4..7 (pod 1) on {plan[1]} (cordoned) re-placed to {moved[1]}" in message
    assert "(the same NVLink domain)" in message
    assert rack.world.status()["degradedRanks"] == [4, 5, 6, 7]
    assert rack.world.condition("Placed") == ("False", "WaitingForPods")
    assert Reason.NODE_MAINTENANCE in [t.reason for t in outcome.transitions]
    assert Reason.NODE_MAINTENANCE.severity.value == "Warning"  # as every Degraded=True
    # Nothing changes until the drain evicts the pod: the plan stays, nothing is written.
    writes = len(rack.world.api.writes)
    assert rack.reconcile().plan.pods == moved and len(rack.world.api.writes) == writes
    rack.evict(1, "v1")
    rack.reconcile()
    recreated = rack.world.api.objects[pod_path(f"{NAME}-1-v1")]
    assert planned_node_of(recreated) == moved[1] and not is_gated(recreated)
    rack.bind_pinned()
    rack.reconcile()
    assert rack.degraded()[:2] == ("False", "NodesHealthy")
    assert rack.world.condition("Placed") == ("True", "AllPodsBound")
    assert rack.world.status()["degradedRanks"] == []


def test_two_drained_trays_get_the_two_spares() -> None:
    rack, plan = placed_rack()
    rack.node(plan[1])["spec"]["unschedulable"] = True
    rack.reconcile()
    rack.node(plan[2])["spec"]["taints"] = [
        {"key": "fabricfit.dev/maintenance", "effect": "NoExecute"}
    ]
    rack.reconcile()
    moved = read_plan(rack.world.status()).pods
    assert {moved[1], moved[2]} == set(SPARES)  # the job's own pending pod holds the first
    status, reason, message = rack.degraded()
    assert (status, reason) == ("True", "NodeMaintenance")
    assert "(maintenance (taint fabricfit.dev/maintenance))" in message
    assert rack.world.status()["degradedRanks"] == list(range(4, 12))


def test_with_no_room_left_the_plan_stays_and_degraded_says_so() -> None:
    rack, plan = placed_rack()
    for spare in SPARES:
        rack.node(spare)["spec"]["unschedulable"] = True
    rack.node(plan[0])["spec"]["unschedulable"] = True
    rack.reconcile()
    assert read_plan(rack.world.status()).pods == plan
    status, reason, message = rack.degraded()
    assert (status, reason) == ("True", "NodeUnavailable") and f"{plan[0]} (cordoned)" in message
