"""Spare trays on GB200 NVL72 racks of kwok nodes, and nodes drained for maintenance.

Two racks of 18 four-GPU trays (one NVLink domain each). A TP8 x DP8 job in 16 trays keeps two
trays of every rack free (``placement.spares``): kube-scheduler binds its 16 pods inside one
rack, none on the rack's last two trays, and a two-tray job goes to the other rack instead of
onto those two. Then one tray of the job is cordoned: fabricfit re-plans
its ranks onto a spare of the same rack at once, the pod is evicted through the Eviction API as
``kubectl drain`` does, and the Job's recreated pod is bound to that spare. Another tray gets the
``fabricfit.dev/maintenance:NoExecute`` taint: kube-controller-manager's taint eviction removes
the pod, and the recreated one lands on the rack's other spare. Every node name asserted here is
``spec.nodeName`` read back from the cluster.
"""

from __future__ import annotations

from typing import Any

from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.e2e.objects import (
    TT,
    condition,
    indexed_job,
    job_pods,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

POOL = "nvl"
TRAYS = 18
MAINTENANCE = {"key": "fabricfit.dev/maintenance", "value": "bios", "effect": "NoExecute"}


def rack_of(manifests: list[dict[str, Any]]) -> dict[str, str]:
    labels = {m["metadata"]["name"]: m["metadata"]["labels"] for m in manifests}
    return {name: lab["topology.fabricfit.dev/nvlink-domain"] for name, lab in labels.items()}


def evict(core: Any, namespace: str, pod: Any) -> None:
    """What ``kubectl drain`` does to each pod: a policy/v1 Eviction."""
    from kubernetes import client

    body = client.V1Eviction(
        metadata=client.V1ObjectMeta(name=pod.metadata.name, namespace=namespace),
        delete_options=client.V1DeleteOptions(grace_period_seconds=0),
    )
    core.create_namespaced_pod_eviction(pod.metadata.name, namespace, body)


def recreated_on(core: Any, namespace: str, index: int, old_uid: str) -> str:
    def bound() -> str | None:
        pod = job_pods(core, namespace, "nvl").get(index)
        fresh = pod is not None and pod.metadata.uid != old_uid
        return pod.spec.node_name if fresh and pod.spec.node_name else None

    return wait_for(bound, 120, what=f"pod {index} recreated and bound")


def wait_moved(custom: Any, namespace: str, index: int, away_from: str) -> dict[str, Any]:
    def moved() -> dict[str, Any] | None:
        tt = read_topology(custom, namespace, "nvl")
        c = condition(tt, "Degraded")
        draining = c is not None and c["reason"] == "NodeMaintenance"
        return tt if draining and planned(tt)[index] != away_from else None

    return wait_for(moved, 90, what=f"pod {index} drained from the plan")


def test_spares_stay_free_and_drained_trays_move_to_a_spare_of_their_rack(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    manifests = make_pool(
        core,
        POOL,
        rail_groups_per_spine=2,
        nodes_per_rail_group=TRAYS,
        nodes_per_rack=TRAYS,
        nvlink_domain_nodes=TRAYS,
        gpus_per_node=4,
        nics_per_node=4,
        fabric="gb200-nvl72",
    )
    rack = rack_of(manifests)
    batch.create_namespaced_job(namespace, indexed_job("nvl", 16, POOL, gpus=4))
    spec = topology(
        "nvl", "nvl", {"tensor": 8, "data": 8}, gpusPerPod=4,
        placement={"mode": "pinned", "spares": {"nodesPerNvlinkDomain": 2}},
    )  # fmt: skip
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
    tt = wait_condition(custom, namespace, "nvl", "Placed", "True", 120)
    pods = wait_bound(core, namespace, "nvl", 16)
    nodes = {i: pods[i].spec.node_name for i in sorted(pods)}
    assert list(nodes.values()) == planned(tt)
    (home,) = {rack[n] for n in nodes.values()}  # every tensor group inside one NVL72 rack
    trays = sorted(n for n, r in rack.items() if r == home)
    spares = trays[-2:]  # all trays equally free: the last two of the rack
    assert len(set(nodes.values())) == 16 and not set(nodes.values()) & set(spares)
    reported = tt["status"]["spares"]
    assert reported["perNvlinkDomain"] == 2 and reported["source"] == "spec.placement.spares"
    assert set(spares) <= set(reported["nodes"]) and len(reported["nodes"]) == 4
    # A small job would best-fit into the rack's last two trays; they are spares, so it goes to
    # the other rack, whose own two last trays it leaves free too.
    batch.create_namespaced_job(namespace, indexed_job("small", 2, POOL, gpus=4))
    small_spec = topology(
        "small", "small", {"tensor": 8}, gpusPerPod=4,
        placement={"mode": "pinned", "spares": {"nodesPerNvlinkDomain": 2}},
    )  # fmt: skip
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], small_spec)
    wait_condition(custom, namespace, "small", "Placed", "True", 120)
    small = {p.spec.node_name for p in wait_bound(core, namespace, "small", 2).values()}
    other = sorted(n for n, r in rack.items() if r != home)
    assert small <= set(other[:-2]) and len({rack[n] for n in small}) == 1, small
    held = {p.spec.node_name for p in core.list_pod_for_all_namespaces().items}
    assert not held & {*spares, *other[-2:]}

    cordoned, tainted = nodes[3], nodes[5]
    try:
        core.patch_node(cordoned, {"spec": {"unschedulable": True}})
        tt = wait_moved(custom, namespace, 3, cordoned)
        target = planned(tt)[3]
        assert target in spares, (target, spares)
        message = condition(tt, "Degraded")["message"]  # type: ignore[index]
        assert f"on {cordoned} (cordoned) re-placed to {target} (the same NVLink domain)" in message
        assert tt["status"]["degradedRanks"] == list(range(12, 16))
        assert condition(tt, "Placed")["reason"] == "WaitingForPods"  # type: ignore[index]
        assert job_pods(core, namespace, "nvl")[3].spec.node_name == cordoned  # nothing evicted

        old = job_pods(core, namespace, "nvl")[3]
        evict(core, namespace, old)
        assert recreated_on(core, namespace, 3, old.metadata.uid) == target

        old = job_pods(core, namespace, "nvl")[5]
        core.patch_node(tainted, {"spec": {"taints": [MAINTENANCE]}})
        landed = recreated_on(core, namespace, 5, old.metadata.uid)  # Kubernetes evicted it
        assert landed in spares and landed != target and rack[landed] == home

        tt = wait_condition(custom, namespace, "nvl", "Placed", "True", 120)
        tt = wait_condition(custom, namespace, "nvl", "Degraded", "False", 60)
        final = wait_bound(core, namespace, "nvl", 16)
        assert [final[i].spec.node_name for i in sorted(final)] == planned(tt)
        assert {rack[final[i].spec.node_name] for i in final} == {home}
        events = core.list_namespaced_event(
            namespace, field_selector="involvedObject.name=nvl"
        ).items
        assert any(e.reason == "NodeMaintenance" for e in events)
        assert operator.alive()
    finally:
        core.patch_node(cordoned, {"spec": {"unschedulable": False}})
        core.patch_node(tainted, {"spec": {"taints": None}})
        fakenodes.wait_ready(core, [cordoned, tainted])
