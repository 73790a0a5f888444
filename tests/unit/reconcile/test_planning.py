"""A waiting job is re-planned only when something it depends on changed."""

from __future__ import annotations

from dataclasses import replace

from fabricfit.fabric.topology import ClusterSnapshot, FabricPlace, NodeInfo
from fabricfit.reconcile.planning import capacity_fingerprint


def snapshot(free: int = 8, labels: dict[str, str] | None = None) -> ClusterSnapshot:
    node = NodeInfo(
        name="n0", gpus=8, free_gpus=free, rails=8, place=FabricPlace(nvlink_domain="n0"),
        labels=labels or {},
    )  # fmt: skip
    return ClusterSnapshot((node,))


def test_same_inputs_same_fingerprint() -> None:
    assert capacity_fingerprint(snapshot(), {"n0": 8}, "req") == capacity_fingerprint(
        snapshot(), {"n0": 8}, "req"
    )


def test_any_change_that_could_change_the_plan_changes_the_fingerprint() -> None:
    base = capacity_fingerprint(snapshot(), {}, "req")
    assert capacity_fingerprint(snapshot(free=0), {}, "req") != base
    assert capacity_fingerprint(snapshot(), {"n0": 8}, "req") != base
    assert capacity_fingerprint(snapshot(labels={"pool": "a"}), {}, "req") != base
    assert capacity_fingerprint(snapshot(), {}, "other request") != base
    cordoned = ClusterSnapshot((replace(snapshot().nodes[0], available=False),))
    assert capacity_fingerprint(cordoned, {}, "req") != base
