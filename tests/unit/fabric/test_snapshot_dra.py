"""The snapshot on DRA-only nodes: GPUs from ResourceSlices, used GPUs from allocated claims
next to pods' requests; a node with the device plugin keeps its allocatable; and placement
keeps pods that claim GPUs on DRA nodes and pods that request nvidia.com/gpu off them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabricfit.api.models import Parallelism
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.placement.constraints import node_rejection
from fabricfit.placement.request import DEVICE_PLUGIN, DRA, PlacementRequest
from unit.fabric.conftest import build_node

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "dra"


def _items(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())["items"]
    return items


def test_dra_nodes_take_gpus_from_slices_and_claims_hold_them() -> None:
    snapshot = build_snapshot(
        _items("nodes-h100-4.json"),
        resource_slices=_items("resourceslices-h100-4.json"),
        resource_claims=_items("resourceclaims-h100-4.json"),
    )
    assert [(n.name, n.gpus, n.free_gpus, n.dra, n.rails) for n in snapshot.nodes] == [
        ("dra-h100-0", 8, 0, True, 8),
        ("dra-h100-1", 8, 8, True, 8),
        ("dra-h100-2", 8, 8, True, 8),
        ("dra-h100-3", 8, 6, True, 8),
    ]


def test_without_slices_dra_nodes_have_no_gpus() -> None:
    snapshot = build_snapshot(_items("nodes-h100-4.json"))
    assert {n.gpus for n in snapshot.nodes} == {0}
    assert not any(n.dra for n in snapshot.nodes)


def test_a_device_plugin_node_keeps_its_allocatable_and_ignores_claims() -> None:
    slices = _items("resourceslices-h100-4.json")
    claims = _items("resourceclaims-h100-4.json")
    node = build_node("dra-h100-0", gpus="4")
    snapshot = build_snapshot([node], resource_slices=slices, resource_claims=claims)
    info = snapshot.node("dra-h100-0")
    assert (info.gpus, info.free_gpus, info.dra) == (4, 4, False)
    assert any("counting the nvidia.com/gpu allocatable" in d.message for d in snapshot.diagnostics)


def test_slice_and_claim_garbage_lands_in_the_snapshot_diagnostics() -> None:
    snapshot = build_snapshot(
        _items("nodes-h100-4.json"), resource_slices=[{"spec": 1}], resource_claims=[7]
    )
    messages = [d.message for d in snapshot.diagnostics]
    assert "is not an object; skipped" in messages


def test_pods_go_only_where_their_gpus_come_from() -> None:
    dra = build_snapshot(
        _items("nodes-h100-4.json"), resource_slices=_items("resourceslices-h100-4.json")
    ).node("dra-h100-1")
    plugin = build_snapshot([build_node("p0")]).node("p0")
    job = Parallelism(tensor=8)
    claiming = PlacementRequest(parallelism=job, gpu_source=DRA)
    requesting = PlacementRequest(parallelism=job, gpu_source=DEVICE_PLUGIN)
    unknown = PlacementRequest(parallelism=job)
    assert node_rejection(dra, claiming, {}) is None
    assert node_rejection(plugin, claiming, {}) == (
        "no GPUs in DRA ResourceSlices (the pods claim their GPUs)"
    )
    assert node_rejection(dra, requesting, {}) == (
        "no nvidia.com/gpu allocatable (its GPUs are DRA devices)"
    )
    assert node_rejection(dra, unknown, {}) is None and node_rejection(plugin, unknown, {}) is None
