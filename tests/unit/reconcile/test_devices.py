"""Releasing a gated pod onto its planned devices: pin, find the pod's own claim, finalizer,
one status write, a check for double booking (taken back), ungate — against an in-memory API."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import jsonpatch

from fabricfit.fabric.deviceask import DEVICE_CLASS_KIND, device_ask
from fabricfit.fabric.podclaims import TEMPLATE_KIND
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.kube.rest import ApiError
from fabricfit.placement.devices import PodDevices
from fabricfit.reconcile.devices import Step, devices_still_ours, release_onto_devices
from fabricfit.render.claims import DELETE_PROTECTION
from fabricfit.render.pods import is_gated, planned_node_of
from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.e2e import dra

NODE = "d-s0-g0-n0000"
PLANNED = PodDevices(NODE, ("gpu-4", "gpu-5", "gpu-6", "gpu-7"), ("pci-0000-5e-00-0",
                     "pci-0000-60-00-0", "pci-0000-8a-00-0", "pci-0000-8c-00-0"))  # fmt: skip


class FakeApi:
    """One pod and the cluster's claims, with resourceVersion checks on PUT."""

    def __init__(self, pod: dict[str, Any], claims: list[dict[str, Any]]) -> None:
        self.pod = pod
        self.claims = {c["metadata"]["name"]: c for c in claims}
        self.version = 1
        self.writes: list[str] = []

    async def patch(self, path: str, body: Any, kind: str = "merge") -> dict[str, Any]:
        self.writes.append("pod")
        try:
            self.pod = jsonpatch.apply_patch(self.pod, body)
        except (jsonpatch.JsonPatchTestFailed, jsonpatch.JsonPatchConflict):
            raise ApiError(422, "Invalid", "test failed") from None
        return copy.deepcopy(self.pod)

    async def get(self, path: str) -> dict[str, Any] | None:
        found = self.claims.get(path.rsplit("/", 1)[-1])
        return copy.deepcopy(found) if found is not None else None

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        if body["metadata"].get("resourceVersion") != self.claims[name]["metadata"].get(
            "resourceVersion"
        ):
            raise ApiError(409, "Conflict", "the object has been modified")
        self.version += 1
        self.writes.append("status" if path.endswith("/status") else "claim")
        stored = copy.deepcopy(body)
        stored["metadata"]["resourceVersion"] = str(self.version)
        self.claims[name] = stored
        return copy.deepcopy(stored)

    async def list(self, path: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(c) for c in self.claims.values()]


def gated_pod(claim: str | None = "p-0-devices-x") -> dict[str, Any]:
    statuses = [{"name": "devices", "resourceClaimName": claim}] if claim else []
    return {
        "metadata": {"name": "p-0", "namespace": "ns", "uid": "uid-p0", "resourceVersion": "7"},
        "spec": {"schedulingGates": [{"name": "fabricfit.dev/placement"}], "containers": []},
        "status": {"resourceClaimStatuses": statuses},
    }


def own_claim(owner: str = "uid-p0") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p-0-devices-x",
            "namespace": "ns",
            "resourceVersion": "1",
            "ownerReferences": [{"kind": "Pod", "name": "p-0", "uid": owner, "controller": True}],
        },
        "spec": {"devices": {"requests": []}},
    }


def setup() -> tuple[Any, Any]:
    fabric = fakenodes.FakeFabric(prefix="d", rail_groups_per_spine=1, nodes_per_rail_group=1)
    nodes = [fakenodes.as_ready(n) for n in dra.dra_nodes(fakenodes.node_manifests(fabric))]
    snapshot = build_snapshot(nodes, [], resource_slices=dra.node_slices(NODE))
    objects = {
        (TEMPLATE_KIND, "devices"): dra.claim_template("devices", 4, 4),
        (DEVICE_CLASS_KIND, "gpu.nvidia.com"): dra.GPU_CLASS,
        (DEVICE_CLASS_KIND, "dranet"): dra.NIC_CLASS,
    }
    template = {"spec": dra.claiming({"containers": [{"name": "c", "image": "x"}]}, "devices")}
    ask = device_ask(template, objects, 4)
    assert ask.enforced
    return snapshot, ask


def release(api: FakeApi) -> Step:
    snapshot, ask = setup()
    return asyncio.run(release_onto_devices(api, api.pod, PLANNED, ask, snapshot))  # type: ignore[arg-type]


def test_the_claim_is_allocated_the_planned_devices_then_the_pod_ungated() -> None:
    api = FakeApi(gated_pod(), [own_claim()])
    assert release(api) is Step.RELEASED
    claim = api.claims["p-0-devices-x"]
    assert api.writes == ["pod", "claim", "status", "pod"]  # pin, finalizer, allocate, ungate
    assert claim["metadata"]["finalizers"] == [DELETE_PROTECTION]
    allocation = claim["status"]["allocation"]
    results = allocation["devices"]["results"]
    assert [(r["request"], r["device"]) for r in results] == [
        *(("gpus", g) for g in PLANNED.gpus),
        *(("nics", n) for n in PLANNED.nics),
    ]
    assert {(r["driver"], r["pool"]) for r in results} == {
        ("gpu.nvidia.com", NODE),
        ("dra.net", NODE),
    }
    assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [NODE]
    assert allocation["allocationTimestamp"].endswith("Z")
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "p-0", "uid": "uid-p0"}]
    assert planned_node_of(api.pod) == NODE and not is_gated(api.pod)


def test_without_its_claim_yet_the_pod_is_pinned_and_stays_gated() -> None:
    api = FakeApi(gated_pod(claim=None), [own_claim()])
    assert release(api) is Step.WAITING
    assert planned_node_of(api.pod) == NODE and is_gated(api.pod)
    assert "status" not in api.claims["p-0-devices-x"]


def test_a_claim_of_an_earlier_pod_of_that_name_is_not_touched() -> None:
    api = FakeApi(gated_pod(), [own_claim(owner="uid-of-a-pod-since-deleted")])
    assert release(api) is Step.WAITING
    assert api.writes == ["pod"] and is_gated(api.pod)


def test_a_device_another_claim_holds_is_taken_back_and_the_pod_reported() -> None:
    other = dra.allocated_claim("other", NODE, ["gpu-5"], namespace="team-b")
    api = FakeApi(gated_pod(), [own_claim(), other])
    assert release(api) is Step.CONFLICT
    assert "allocation" not in api.claims["p-0-devices-x"]["status"]
    assert is_gated(api.pod)


def test_a_repeat_after_the_write_only_lifts_the_gate() -> None:
    api = FakeApi(gated_pod(), [own_claim()])
    release(api)
    api.pod["spec"]["schedulingGates"] = [{"name": "fabricfit.dev/placement"}]
    api.writes.clear()
    assert release(api) is Step.RELEASED
    assert api.writes == ["pod"] and not is_gated(api.pod)


def test_a_recorded_plan_keeps_its_devices_while_only_its_own_claims_hold_them() -> None:
    mine = dra.allocated_claim("p-0-devices-x", NODE, ["gpu-4"], namespace="ns")
    mine["status"]["reservedFor"] = [{"resource": "pods", "name": "p-0", "uid": "u"}]
    assert devices_still_ours([PLANNED], [mine], {"p-0"}, {})
    theirs = dra.allocated_claim("t", NODE, ["gpu-6"], namespace="other")
    theirs["status"]["reservedFor"] = [{"resource": "pods", "name": "x", "uid": "v"}]
    assert not devices_still_ours([PLANNED], [mine, theirs], {"p-0"}, {})
    assert not devices_still_ours([PLANNED], [], {"p-0"}, {NODE: frozenset({"gpu-7"})})
