"""Device-exact placement: DRA GPUs and RDMA NICs by position, the plan naming free devices,
peers on the same rails, each GPU's NIC on its PCIe root, and the device plugin's hand-out."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.fabric.deviceask import DEVICE_CLASS_KIND, device_ask, unusable_devices
from fabricfit.fabric.devices import pcie_root
from fabricfit.fabric.podclaims import TEMPLATE_KIND
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.devices import pod_devices
from fabricfit.placement.request import DRA, ENFORCED, NOT_ENFORCED, PlacementRequest
from fabricfit.placement.search import plan_placement
from fabricfit.policy.devices import settle_devices
from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.e2e import dra

PROFILE = get_profile("h100-leaf-spine-2to1")
MODEL = ModelShape(parameters=8_000_000_000, hidden_size=4096, layers=32, sequence_length=4096)


def cluster(claims: list[dict[str, Any]] = (), nics: bool = True) -> ClusterSnapshot:  # type: ignore[assignment]
    fabric = fakenodes.FakeFabric(prefix="d", rail_groups_per_spine=2, nodes_per_rail_group=2)
    nodes = [fakenodes.as_ready(n) for n in dra.dra_nodes(fakenodes.node_manifests(fabric))]
    slices = [s for n in nodes for s in dra.node_slices(n["metadata"]["name"], nics=nics)]
    return build_snapshot(nodes, [], resource_slices=slices, resource_claims=list(claims))


def objects(nics: int = 4) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (TEMPLATE_KIND, "devices"): dra.claim_template("devices", 4, nics),
        (DEVICE_CLASS_KIND, "gpu.nvidia.com"): dra.GPU_CLASS,
        (DEVICE_CLASS_KIND, "dranet"): dra.NIC_CLASS,
    }


def template() -> dict[str, Any]:
    spec = dra.claiming({"containers": [{"name": "c", "image": "x"}]}, "devices")
    return {"spec": spec}


def request(choice: str, nics: int = 4) -> PlacementRequest:
    return PlacementRequest(
        parallelism=Parallelism(tensor=4, data=4),
        gpus_per_pod=4,
        model=MODEL,
        gpu_source=DRA,
        gpu_choice=choice,
        nics_per_pod=nics,
    )


def test_gpus_take_positions_in_pci_order_and_nics_pair_on_their_root() -> None:
    snapshot = cluster()
    assert snapshot.devices is not None
    node = snapshot.devices.of("d-s0-g0-n0000") or pytest.fail("no devices")
    assert [g.name for g in node.gpus] == [f"gpu-{i}" for i in range(8)]
    for gpu, nic in zip(node.gpus, node.nics, strict=True):
        assert nic is not None and pcie_root(nic) == pcie_root(gpu)
    # two GPUs and two NICs per root: the k-th GPU of a root takes its k-th NIC
    assert len({n.name for n in node.nics if n is not None}) == 8
    assert "eth0" not in {n.name for n in node.nics if n is not None}


def test_an_enforced_plan_names_free_devices_and_keeps_peers_on_one_rail() -> None:
    # Another tenant holds gpu-0..3 of d-s0-g0-n0000: its free window is positions 4-7.
    tenant = dra.allocated_claim("tenant", "d-s0-g0-n0000", [f"gpu-{i}" for i in range(4)])
    snapshot = cluster([tenant])
    ask = device_ask(template(), objects(), 4)
    assert ask.enforced, ask.reason
    choice = settle_devices(request(ENFORCED), ask, snapshot)
    decision = plan_placement(choice.snapshot, choice.request, PROFILE)
    assert decision.feasible and decision.gpu_choice == ENFORCED
    taken = {("d-s0-g0-n0000", f"gpu-{i}") for i in range(4)}
    named = {(a.node, a.device) for a in decision.assignments}
    assert len(named) == 16 and not named & taken
    devices = snapshot.devices
    assert devices is not None
    for a in decision.assignments:
        node = devices.of(a.node) or pytest.fail(a.node)
        gpu = node.gpus[a.gpu]
        assert a.device == gpu.name
        nic = next(n for n in node.nics if n is not None and n.name == a.nic)
        assert pcie_root(nic) == pcie_root(gpu)
    # data-parallel peers (local GPU j of every pod) use the same rails on every node
    by_rank = {a.rank: a for a in decision.assignments}
    for group in decision.groups["data"]:
        rails: dict[str, set[int]] = {}
        for r in group:
            rails.setdefault(by_rank[r].node, set()).add(by_rank[r].gpu)
        assert len({frozenset(v) for v in rails.values()}) == 1, rails
    per_pod = pod_devices(decision, 4)
    assert [len(p.gpus) for p in per_pod] == [4] * 4
    assert all(len(p.nics) == 4 for p in per_pod)


@pytest.mark.parametrize("profile", ["h100-leaf-spine-2to1", "h100-rail-only"])
def test_the_window_is_chosen_so_that_peers_line_up(profile: str) -> None:
    # One rail group of three nodes; another tenant holds gpu-0..3 of the first, whose only
    # free window is positions 4-7. Three 4-GPU pods of one data-parallel group: fabricfit
    # puts all three on positions 4-7 of three nodes (one rail per DP ring). The device plugin
    # would hand an empty node's first pod positions 0-3, so a plan priced on what it hands
    # out cannot line them up and costs more.
    fabric = fakenodes.FakeFabric(prefix="d", rail_groups_per_spine=1, nodes_per_rail_group=3)
    nodes = [fakenodes.as_ready(n) for n in dra.dra_nodes(fakenodes.node_manifests(fabric))]
    names = [n["metadata"]["name"] for n in nodes]
    slices = [s for n in names for s in dra.node_slices(n)]
    tenant = dra.allocated_claim("tenant", names[0], [f"gpu-{i}" for i in range(4)])
    snapshot = build_snapshot(nodes, [], resource_slices=slices, resource_claims=[tenant])
    job = replace(request(ENFORCED), parallelism=Parallelism(tensor=4, data=3))
    choice = settle_devices(job, device_ask(template(), objects(), 4), snapshot)
    ours = plan_placement(choice.snapshot, choice.request, get_profile(profile))
    firsts = [(a.node, a.device, a.nic) for a in ours.assignments if a.local == 0]
    assert [(n, d) for n, d, _ in firsts] == [(n, "gpu-4") for n in names]
    assert {nic for *_, nic in firsts} == {"pci-0000-5e-00-0"}  # gpu-4's NIC, on its root
    handed = plan_placement(snapshot, replace(job, gpu_choice=NOT_ENFORCED), get_profile(profile))
    assert handed.gpu_choice == NOT_ENFORCED
    assert all(a.device is None for a in handed.assignments)
    assert ours.predicted is not None and handed.predicted is not None
    assert ours.predicted.step_comm_seconds < 0.8 * handed.predicted.step_comm_seconds


def test_a_gpu_whose_nic_is_taken_is_not_chosen() -> None:
    tenant = {
        **dra.allocated_claim("nic", "d-s0-g0-n0000", []),
    }
    tenant["status"]["allocation"]["devices"]["results"] = [
        {"request": "n", "driver": "dra.net", "pool": "d-s0-g0-n0000", "device": "pci-0000-16-00-0"}
    ]
    snapshot = cluster([tenant])
    ask = device_ask(template(), objects(), 4)
    choice = settle_devices(request(ENFORCED), ask, snapshot)
    node = choice.snapshot.node("d-s0-g0-n0000")
    assert node.held_gpus == frozenset({0})  # gpu-0's NIC (first on root 0) is someone else's
    decision = plan_placement(choice.snapshot, choice.request, PROFILE)
    assert ("d-s0-g0-n0000", "gpu-0") not in {(a.node, a.device) for a in decision.assignments}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda o: o.pop((DEVICE_CLASS_KIND, "dranet")), "DeviceClass dranet is not known"),
        (
            lambda o: o[(TEMPLATE_KIND, "devices")]["spec"]["spec"]["devices"].update(
                constraints=[{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]
            ),
            "constraints",
        ),
        (
            lambda o: o[(TEMPLATE_KIND, "devices")]["spec"]["spec"]["devices"]["requests"][0][
                "exactly"
            ].update(allocationMode="All"),
            "ExactCount",
        ),
    ],
)
def test_claims_fabricfit_cannot_answer_are_left_to_the_scheduler(change: Any, why: str) -> None:
    found = objects()
    change(found)
    ask = device_ask(template(), found, 4)
    assert not ask.enforced and why in ask.reason
    choice = settle_devices(request(ENFORCED), ask, cluster())
    assert choice.request.gpu_choice == NOT_ENFORCED
    assert "kube-scheduler's DRA allocator picks" in choice.words


def test_a_selector_that_needs_kubernetes_cel_makes_the_choice_not_enforced() -> None:
    found = objects()
    exact = found[(TEMPLATE_KIND, "devices")]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    cel = "device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('9.0.0'))"
    exact["selectors"] = [{"cel": {"expression": cel}}]
    snapshot = cluster()
    ask = device_ask(template(), found, 4)
    assert ask.enforced  # the claim's shape allows it ...
    assert snapshot.devices is not None and unusable_devices(ask, snapshot.devices) is None
    choice = settle_devices(request(ENFORCED), ask, snapshot)  # ... its selector cannot be checked
    assert choice.request.gpu_choice == NOT_ENFORCED and "CEL" in choice.words


def test_a_selector_rejecting_devices_keeps_them_out() -> None:
    found = objects()
    exact = found[(TEMPLATE_KIND, "devices")]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    cel = "device.attributes['resource.kubernetes.io'].pcieRoot != 'pci0000:15'"
    exact["selectors"] = [{"cel": {"expression": cel}}]
    snapshot = cluster()
    ask = device_ask(template(), found, 4)
    assert snapshot.devices is not None
    unusable = unusable_devices(ask, snapshot.devices)
    assert unusable is not None and unusable["d-s0-g0-n0000"] == frozenset({"gpu-0", "gpu-1"})
