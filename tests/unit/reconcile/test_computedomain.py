"""The ComputeDomain step of a reconcile on GB200 NVL72 trays, against an in-memory API server."""

from __future__ import annotations

import asyncio
from typing import Any

from fabricfit.kube.rest import ApiError, path_for
from fabricfit.reconcile import podevents, service
from fabricfit.reconcile.inventory import slim_node
from fabricfit_dev.cluster import fakenodes
from unit.reconcile.world import JOB_PATH, NAME, NS, TT_PATH, World, job, topology

DISCOVERY = "/apis/resource.nvidia.com/v1beta1"
CDS = path_for("resource.nvidia.com/v1beta1", "computedomains", NS)
CD = f"{CDS}/{NAME}"
CHANNEL = f"{NAME}-channel"


def trays() -> list[dict[str, Any]]:
    """Two GB200 NVL72 racks: 18 trays of 4 GPUs each, one NVLink domain per rack."""
    fabric = fakenodes.FakeFabric(
        prefix="t", rail_groups_per_spine=1, nodes_per_rail_group=36, nodes_per_rack=18,
        gpus_per_node=4, nics_per_node=4, nvlink_domain_nodes=18, fabric="gb200-nvl72",
    )  # fmt: skip
    ready = [{"type": "Ready", "status": "True"}]
    return [
        slim_node({**m, "status": {**m["status"], "conditions": ready}})
        for m in fakenodes.node_manifests(fabric)
    ]


def claiming_job(claim: bool, pods: int, gpus: int) -> dict[str, Any]:
    """GPUs from the device plugin, the channel from the ComputeDomain's claim template."""
    body = job(completions=pods)
    spec = body["spec"]["template"]["spec"]
    resources: dict[str, Any] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec["containers"][0]["resources"] = resources
    if claim:
        spec["resourceClaims"] = [{"name": "ch", "resourceClaimTemplateName": CHANNEL}]
        resources["claims"] = [{"name": "ch"}]
    return body


def gb200_world(*, crd: bool = True, claim: bool = True, gpus_per_pod: int = 4) -> World:
    pods = 16 // gpus_per_pod
    world = World(
        topology(gpusPerPod=gpus_per_pod, parallelism={"tensor": 8, "data": 2}),
        (JOB_PATH, claiming_job(claim, pods, gpus_per_pod)),
    )
    world.nodes = trays()
    if crd:
        world.api.put(
            DISCOVERY, {"kind": "APIResourceList", "resources": [{"name": "computedomains"}]}
        )
    return world


def reconcile(world: World) -> service.Outcome:
    return asyncio.run(service.reconcile(world.body(), world.state, world.views))


def test_a_plan_spanning_trays_gets_an_owned_compute_domain_sized_from_the_plan() -> None:
    world = gb200_world()
    outcome = reconcile(world)
    assert world.condition("Planned") == ("True", "Planned")
    assert world.condition("ComputeDomain") == ("True", "ComputeDomainCreated")
    cd = world.api.objects[CD]
    planned = {p["node"] for p in world.status()["pods"]}
    assert len(planned) == 4
    assert cd["spec"] == {"numNodes": 4, "channel": {"resourceClaimTemplate": {"name": CHANNEL}}}
    (owner,) = cd["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "TrainingTopology", NAME, "u1", True,
    )  # fmt: skip
    assert world.status()["computeDomain"] == {
        "name": NAME, "numNodes": 4, "channelTemplate": CHANNEL, "state": "Pending",
        "claimed": True, "groups": "2 tensor groups, 8 data groups",
    }  # fmt: skip
    assert "ComputeDomainCreated" in [t.reason for t in outcome.transitions]
    # The workload was released only after the ComputeDomain existed.
    order = [p for p, _k, _b in world.api.writes if p in (CDS, JOB_PATH)]
    assert order[0] == CDS and JOB_PATH in order
    # Idempotent: a second reconcile writes no second ComputeDomain.
    reconcile(world)
    assert len(world.api.writes_to(CDS)) == 1


def test_the_drivers_state_is_reported() -> None:
    world = gb200_world()
    reconcile(world)
    world.api.put(CD, {**world.api.objects[CD], "status": {"status": "Ready"}})
    reconcile(world)
    assert world.status()["computeDomain"]["state"] == "Ready"


def test_without_the_crd_a_condition_says_so_and_placement_goes_on() -> None:
    world = gb200_world(crd=False)
    reconcile(world)
    assert world.condition("ComputeDomain") == ("False", "ComputeDomainUnavailable")
    assert world.condition("Planned") == ("True", "Planned")
    assert world.api.writes_to(JOB_PATH), "the workload is still placed"
    assert CD not in world.api.objects
    assert world.status()["computeDomain"]["state"] == "Unavailable"
    message = next(
        c["message"] for c in world.status()["conditions"] if c["type"] == "ComputeDomain"
    )
    assert "falls back to the network" in message and "assumes NVLink" in message


def test_a_template_without_the_claim_is_told_what_to_add() -> None:
    world = gb200_world(claim=False)
    reconcile(world)
    assert world.condition("ComputeDomain") == ("False", "ChannelClaimMissing")
    assert CD in world.api.objects
    message = next(
        c["message"] for c in world.status()["conditions"] if c["type"] == "ComputeDomain"
    )
    assert f"resourceClaimTemplateName: {CHANNEL}" in message


def test_two_pods_on_one_tray_cannot_both_join_the_channel() -> None:
    world = gb200_world(gpus_per_pod=2)
    reconcile(world)
    assert world.condition("ComputeDomain") == ("False", "ChannelNodeShared")


def test_a_refused_compute_domain_is_a_condition_not_a_crash() -> None:
    world = gb200_world()
    world.api.refuse[CDS] = ApiError(403, "Forbidden", "computedomains is forbidden")
    reconcile(world)
    assert world.condition("ComputeDomain") == ("False", "ComputeDomainRefused")
    assert world.condition("Planned") == ("True", "Planned")


def test_one_node_per_domain_needs_no_compute_domain() -> None:
    world = World(topology(), (JOB_PATH, job()))  # DGX nodes: the NVLink domain is the node
    world.api.put(DISCOVERY, {"resources": [{"name": "computedomains"}]})
    reconcile(world)
    assert world.condition("ComputeDomain") is None
    assert "computeDomain" not in world.status()
    assert not world.api.writes_to(CDS)


def test_deletion_deletes_our_compute_domain_only() -> None:
    world = gb200_world()
    reconcile(world)
    asyncio.run(podevents.release(world.body(), world.state, world.views))
    assert CD not in world.api.objects
    world.api.put(CD, {"metadata": {"name": NAME, "labels": {}}, "spec": {}})
    asyncio.run(podevents.release(world.body(), world.state, world.views))
    assert CD in world.api.objects, "a ComputeDomain someone else made is left alone"


def stale_domain(num_nodes: int, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": NAME, "namespace": NS, "labels": labels},
        "spec": {"numNodes": num_nodes, "channel": {"resourceClaimTemplate": {"name": CHANNEL}}},
    }


def test_our_domain_sized_for_another_plan_is_replaced_before_pods_start() -> None:
    world = gb200_world()
    world.api.put(CD, stale_domain(2, {"fabricfit.dev/topology": NAME}))
    reconcile(world)
    assert world.api.objects[CD]["spec"]["numNodes"] == 4
    assert (CD, "delete", None) in world.api.writes


def test_a_domain_someone_else_made_is_reported_as_it_is() -> None:
    world = gb200_world()
    world.api.put(CD, stale_domain(2, {}))
    reconcile(world)
    assert world.api.objects[CD]["spec"]["numNodes"] == 2
    assert (CD, "delete", None) not in world.api.writes
    assert world.status()["computeDomain"]["numNodes"] == 2


def test_a_tpu_job_gets_no_nvidia_compute_domain() -> None:
    """The same plan priced on a TPU fabric: the span is a torus's business, not NVLink's, so
    the operator neither creates a ComputeDomain nor reports one."""
    world = gb200_world()
    world.api.objects[TT_PATH]["spec"]["fabric"] = "tpu-v5p"
    reconcile(world)
    assert world.condition("Planned") == ("True", "Planned")
    assert world.api.writes_to(CDS) == []
    assert world.status().get("computeDomain") is None
    assert world.condition("ComputeDomain") is None
