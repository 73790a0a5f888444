"""ResourceClaims -> GPUs held per node and per pod; the dump kube-scheduler v1.36.3 wrote on the
local control plane; fallbacks when the slices do not know a device; garbage never raises."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.fabric.claims import read_claim_holds
from fabricfit.fabric.resourceslices import read_resource_slices

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "dra"


def _items(name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())["items"]
    return items


def claim(
    results: list[dict[str, Any]],
    *,
    node: str | None = None,
    pods: tuple[str, ...] = ("p0",),
    name: str = "c",
) -> dict[str, Any]:
    allocation: dict[str, Any] = {"devices": {"results": results}}
    if node is not None:
        match = {"key": "metadata.name", "operator": "In", "values": [node]}
        allocation["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [match]}]}
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "status": {
            "allocation": allocation,
            "reservedFor": [{"resource": "pods", "name": p, "uid": p} for p in pods],
        },
    }


def result(device: str, pool: str = "n0", **extra: Any) -> dict[str, Any]:
    return {"driver": "gpu.nvidia.com", "pool": pool, "device": device, "request": "r", **extra}


def test_the_scheduler_written_fixture_holds_eight_and_two_gpus() -> None:
    inventory = read_resource_slices(_items("resourceslices-h100-4.json"))
    holds = read_claim_holds(_items("resourceclaims-h100-4.json"), inventory)
    assert dict(holds.by_node) == {"dra-h100-0": 8, "dra-h100-3": 2}
    assert dict(holds.by_pod) == {("tenant-a", "trainer-0"): 8, ("tenant-b", "notebook"): 2}
    assert holds.diagnostics == ()


def test_without_slices_the_node_selector_then_the_pool_name_places_a_device() -> None:
    holds = read_claim_holds(
        [
            claim([result("gpu-0", "pool-x")], node="n7", name="a"),
            claim([result("gpu-1")], name="b"),
        ]
    )
    assert dict(holds.by_node) == {"n0": 1, "n7": 1}


def test_a_device_counts_once_and_admin_access_and_other_drivers_hold_nothing() -> None:
    other = {**result("eth0"), "driver": "dra.net"}
    claims = [
        claim([result("gpu-0"), other], name="a"),
        claim([result("gpu-0")], name="b", pods=("p1",)),
        claim([result("gpu-1", adminAccess=True)], name="monitor", pods=("p2",)),
    ]
    holds = read_claim_holds(claims)
    assert dict(holds.by_node) == {"n0": 1}
    assert dict(holds.by_pod) == {("ns", "p0"): 1, ("ns", "p1"): 1}


def test_mig_devices_known_to_the_slices_are_not_whole_gpus() -> None:
    devices = [
        {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}},
        {"name": "gpu-1-mig-9-0-4", "attributes": {"type": {"string": "mig"}}},
    ]
    pool = {"name": "n0", "generation": 1, "resourceSliceCount": 1}
    slices = [
        {
            "metadata": {"name": "s"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": "n0",
                "pool": pool,
                "devices": devices,
            },
        }
    ]
    holds = read_claim_holds(
        [claim([result("gpu-0"), result("gpu-1-mig-9-0-4")])], read_resource_slices(slices)
    )
    assert dict(holds.by_node) == {"n0": 1}


def test_a_shared_claim_is_not_attributed_to_one_pod_and_pending_claims_hold_nothing() -> None:
    shared = claim([result("gpu-0")], pods=("p0", "p1"))
    pending = {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}, "status": {}}
    holds = read_claim_holds([shared, pending])
    assert dict(holds.by_node) == {"n0": 1}
    assert dict(holds.by_pod) == {}


@pytest.mark.parametrize(
    ("claims", "fragment"),
    [
        ({"items": []}, "is not a list"),
        (["x"], "is not an object"),
        ([claim([{"driver": "gpu.nvidia.com"}])], "no pool or device name"),
    ],
)
def test_garbage_becomes_a_diagnostic(claims: Any, fragment: str) -> None:
    holds = read_claim_holds(claims)
    assert any(fragment in d.message for d in holds.diagnostics), holds.diagnostics


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from(["allocation", "reservedFor", "results", "nodeSelector"]))
def test_never_raises_on_any_shape(noise: Any, where: str) -> None:
    one = claim([result("gpu-0")], node="n0")
    if where == "results":
        one["status"]["allocation"]["devices"]["results"] = noise
    elif where == "nodeSelector":
        one["status"]["allocation"]["nodeSelector"] = noise
    else:
        one["status"][where] = noise
    read_claim_holds([one, noise])
