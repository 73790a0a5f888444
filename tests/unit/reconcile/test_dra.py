"""The operator's DRA inputs: the slices/claims mirrors (list, watch, relist, slimming), the
start-up check of resource.k8s.io, and one reconcile on DRA-only nodes — gpusPerPod from the
claim template read from the API server, a claimed node left out, status.gpuAllocation
written, and bound pods' claimed GPUs taken out of their plan's reservation."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from fabricfit.kube.rest import ApiError, path_for
from fabricfit.reconcile import service
from fabricfit.reconcile.context import Views
from fabricfit.reconcile.dra import dra_mirror, dra_served, slim_claim, slim_slice
from fabricfit.reconcile.inventory import holds_of_others
from unit.reconcile.world import JOB_PATH, NS, World, job, topology

TEMPLATE_PATH = path_for("resource.k8s.io/v1", "resourceclaimtemplates", NS, "eight-gpus")


def gpu_slice(node: str, driver: str = "gpu.nvidia.com", version: str = "1") -> dict[str, Any]:
    devices = [{"name": f"gpu-{i}", "attributes": {"type": {"string": "gpu"}}} for i in range(8)]
    return {
        "metadata": {"name": f"{node}-{driver}", "resourceVersion": version},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def allocated(node: str, pod: str, gpus: int = 8) -> dict[str, Any]:
    results = [
        {"driver": "gpu.nvidia.com", "pool": node, "device": f"gpu-{i}", "request": "gpus"}
        for i in range(gpus)
    ]
    return {
        "metadata": {"namespace": "other", "name": f"{pod}-gpus", "resourceVersion": "1"},
        "spec": {"devices": {"requests": []}},
        "status": {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [{"resource": "pods", "name": pod, "uid": pod}],
        },
    }


class FakeRest:
    def __init__(self, items: list[dict[str, Any]], streams: list[list[dict[str, Any]]]) -> None:
        self.items, self.streams, self.lists = items, streams, 0

    async def request(self, method: str, path: str) -> dict[str, Any]:
        self.lists += 1
        return {"metadata": {"resourceVersion": "10"}, "items": self.items}

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[dict[str, Any]]:
        if not self.streams:
            raise asyncio.CancelledError
        for event in self.streams.pop(0):
            yield event


def test_the_slice_mirror_keeps_only_the_gpu_driver_and_follows_the_watch() -> None:
    rest = FakeRest(
        [gpu_slice("n0"), gpu_slice("n0", "compute-domain.nvidia.com")],
        [
            [
                {"type": "ADDED", "object": gpu_slice("n1", version="11")},
                {"type": "DELETED", "object": gpu_slice("n0", version="12")},
            ],
            [{"type": "ERROR", "object": {"code": 410}}],
        ],
    )
    mirror = dra_mirror(rest, "resourceslices", slim_slice)  # type: ignore[arg-type]
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(mirror.run())
    assert [s["spec"]["nodeName"] for s in mirror.values()] == ["n0"]  # relisted after 410
    assert rest.lists == 2


def test_a_slim_claim_keeps_what_the_snapshot_and_a_pod_claim_name_need() -> None:
    claim = allocated("n0", "p")
    claim["metadata"]["managedFields"] = [{"manager": "kube-scheduler"}]
    slim = slim_claim(claim)
    assert slim["metadata"] == {"name": "p-gpus", "namespace": "other"}
    assert slim["status"]["allocation"] == claim["status"]["allocation"]
    assert slim["spec"] == claim["spec"]


class Discovery:
    def __init__(self, resources: list[str] | None, list_status: int = 200) -> None:
        self.resources, self.list_status = resources, list_status

    async def request(self, method: str, path: str) -> dict[str, Any]:
        if self.resources is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if "limit=1" in path and self.list_status != 200:
            raise ApiError(self.list_status, "Forbidden", "resourceslices is forbidden")
        return {"resources": [{"name": r} for r in self.resources]}


@pytest.mark.parametrize(
    ("api", "served"),
    [
        (Discovery(None), False),
        (Discovery(["deviceclasses"]), False),
        (Discovery(["resourceslices", "resourceclaims"], list_status=403), False),
        (Discovery(["resourceslices", "resourceclaims", "resourceclaimtemplates"]), True),
    ],
)
def test_dra_is_watched_only_when_served_and_readable(api: Discovery, served: bool) -> None:
    assert asyncio.run(dra_served(api)) is served  # type: ignore[arg-type]


class DraWorld(World):
    """World's eight nodes without nvidia.com/gpu, their GPUs in slices, n-s0-g0-n0000 claimed."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        for node in self.nodes:
            del node["status"]["allocatable"]["nvidia.com/gpu"]
        self.slices = [slim_slice(gpu_slice(n["metadata"]["name"])) for n in self.nodes]
        self.claims = [slim_claim(allocated(self.nodes[0]["metadata"]["name"], "tenant"))]

    def views(self) -> Views:
        views = super().views()
        views.slices = copy.deepcopy(self.slices)  # type: ignore[arg-type]
        views.claims = copy.deepcopy(self.claims)
        return views


def claiming_job() -> dict[str, Any]:
    body = job()
    body["spec"]["template"]["spec"] = {
        "resourceClaims": [{"name": "gpus", "resourceClaimTemplateName": "eight-gpus"}],
        "containers": [{"name": "t", "image": "t", "resources": {"claims": [{"name": "gpus"}]}}],
    }
    return body


CLAIM_TEMPLATE = {
    "kind": "ResourceClaimTemplate",
    "metadata": {"namespace": NS, "name": "eight-gpus"},
    "spec": {
        "spec": {
            "devices": {
                "requests": [
                    {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8}}
                ]
            }
        }
    },
}


def test_a_reconcile_on_dra_nodes_settles_gpus_from_the_claim_and_says_who_picks() -> None:
    tt = topology()
    del tt["spec"]["gpusPerPod"]
    world = DraWorld(tt, (JOB_PATH, claiming_job()), (TEMPLATE_PATH, CLAIM_TEMPLATE))
    outcome = asyncio.run(service.reconcile(world.body(), world.state, world.views))
    assert outcome.decision is not None, world.status()
    status = world.status()
    assert status["gpusPerPod"] == 8
    claimed = world.nodes[0]["metadata"]["name"]
    assert claimed not in {p["node"] for p in status["pods"]}
    assert status["gpuAllocation"]["claims"] == ["ResourceClaimTemplate/eight-gpus"]


def test_without_the_template_a_spec_without_gpus_per_pod_is_invalid() -> None:
    tt = topology()
    del tt["spec"]["gpusPerPod"]
    world = DraWorld(tt, (JOB_PATH, claiming_job()))
    asyncio.run(service.reconcile(world.body(), world.state, world.views))
    assert world.condition("Planned") == ("False", "InvalidSpec")
    assert "ResourceClaimTemplate 'eight-gpus' is not found" in str(world.status()["reasons"])


def test_a_bound_pods_claimed_gpus_come_off_its_plans_reservation() -> None:
    pod = {
        "metadata": {"namespace": "team", "name": "a-0", "labels": {"fabricfit.dev/topology": "a"}},
        "spec": {"nodeName": "n0", "containers": []},
        "status": {"phase": "Running"},
    }
    reservations = {("team", "a"): {"n0": 8}}
    assert holds_of_others(("x", "y"), reservations, [pod]) == {"n0": 8}
    assert holds_of_others(("x", "y"), reservations, [pod], {("team", "a-0"): 8}) == {}
