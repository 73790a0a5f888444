"""ResourceSlices -> DRA GPUs per node: the driver's published shape, pool generations, the
v1beta1 shape, and garbage that becomes diagnostics instead of exceptions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.fabric.resourceslices import read_resource_slices

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "dra"


def _slices() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((FIXTURES / "resourceslices-h100-4.json").read_text())[
        "items"
    ]
    return items


def gpu(name: str, kind: str = "gpu", **extra: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"type": {"string": kind}}, **extra}


def piece(
    node: str = "n0",
    devices: list[Any] | None = None,
    *,
    pool: str | None = None,
    generation: int = 1,
    count: int = 1,
    name: str | None = None,
    driver: str = "gpu.nvidia.com",
) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name or f"{node}-{generation}"},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": pool or node, "generation": generation, "resourceSliceCount": count},
            "devices": devices if devices is not None else [gpu("gpu-0"), gpu("gpu-1")],
        },
    }


def test_the_fixture_publishes_eight_gpus_per_node_and_ignores_other_drivers() -> None:
    inventory = read_resource_slices(_slices())
    assert inventory.gpus_by_node() == {f"dra-h100-{i}": 8 for i in range(4)}
    assert inventory.diagnostics == ()
    first = inventory.devices[0]
    assert (first.node, first.pool, first.name, first.kind) == (
        "dra-h100-0",
        "dra-h100-0",
        "gpu-0",
        "gpu",
    )
    assert first.attributes["productName"] == "NVIDIA H100 80GB HBM3"
    assert first.attributes["resource.kubernetes.io/pciBusID"] == "0000:18:00.0"
    assert first.memory_bytes == 81559 * 2**20
    assert inventory.node_of("dra-h100-2", "gpu-5") == "dra-h100-2"
    assert inventory.node_of("dra-h100-2", "channel-0") is None  # compute-domain driver


def test_only_the_newest_generation_of_a_pool_counts() -> None:
    old = piece(devices=[gpu(f"gpu-{i}") for i in range(8)], generation=1)
    new = piece(devices=[gpu("gpu-0"), gpu("gpu-1")], generation=2)
    assert read_resource_slices([old, new]).gpus_by_node() == {"n0": 2}


def test_a_pool_of_several_slices_adds_up_and_an_incomplete_one_is_reported() -> None:
    a = piece(devices=[gpu("gpu-0")], count=3, name="a")
    b = piece(devices=[gpu("gpu-1")], count=3, name="b")
    inventory = read_resource_slices([a, b])
    assert inventory.gpus_by_node() == {"n0": 2}
    assert any("2 of 3 slices" in d.message for d in inventory.diagnostics)


def test_mig_and_vfio_devices_are_not_whole_gpus() -> None:
    devices = [gpu("gpu-0"), gpu("gpu-1-mig-19-0-1", "mig"), gpu("gpu-vfio-2", "vfio")]
    inventory = read_resource_slices([piece(devices=devices)])
    assert inventory.gpus_by_node() == {"n0": 1}
    assert not inventory.is_gpu("n0", "gpu-1-mig-19-0-1")


def test_v1beta1_devices_under_basic_are_read() -> None:
    beta = piece(devices=[{"name": "gpu-0", "basic": {"attributes": {"type": {"string": "gpu"}}}}])
    assert read_resource_slices([beta]).gpus_by_node() == {"n0": 1}


def test_a_tainted_device_is_not_counted() -> None:
    taints = [{"key": "example.com/xid", "effect": "NoExecute"}]
    inventory = read_resource_slices([piece(devices=[gpu("gpu-0", taints=taints), gpu("gpu-1")])])
    assert inventory.gpus_by_node() == {"n0": 1}
    assert any("tainted example.com/xid:NoExecute" in d.message for d in inventory.diagnostics)


@pytest.mark.parametrize(
    ("slices", "fragment"),
    [
        ({"items": []}, "is not a list"),
        ([42], "is not an object"),
        ([{**piece(), "spec": {**piece()["spec"], "nodeName": None, "allNodes": True}}], "no spec"),
        ([{**piece(), "spec": {**piece()["spec"], "pool": {"name": "p"}}}], "spec.pool needs"),
        ([piece(devices=[{"attributes": {}}])], "a device has no name"),
        ([piece(devices=[{"name": "gpu-0", "attributes": {}}])], "no string attribute 'type'"),
        (
            [piece(devices=[{"name": "g", "attributes": {"type": {"string": "gpu", "int": 1}}}])],
            "has no single typed value",
        ),
        ([piece(devices=[gpu("gpu-0"), gpu("gpu-0")])], "listed twice"),
    ],
)
def test_garbage_becomes_a_diagnostic(slices: Any, fragment: str) -> None:
    inventory = read_resource_slices(slices)
    assert any(fragment in d.message for d in inventory.diagnostics), inventory.diagnostics


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(json_values, max_size=4), st.integers(0, 3))
def test_never_raises_on_any_shape(noise: list[Any], where: int) -> None:
    slices: list[Any] = [piece(), *noise]
    spec = slices[0]["spec"]
    field = ["devices", "pool", "nodeName", "driver"][where]
    spec[field] = noise[0] if noise else None
    read_resource_slices(slices).gpus_by_node()
