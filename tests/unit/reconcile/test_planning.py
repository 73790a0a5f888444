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


def test_node_available_reads_the_one_node_a_pin_needs() -> None:
    from fabricfit.reconcile.context import Views
    from fabricfit.reconcile.inventory import slim_node
    from fabricfit.reconcile.planning import node_available

    def node(name: str, ready: str = "True", cordoned: bool = False) -> dict[str, object]:
        return slim_node(
            {
                "metadata": {"name": name, "labels": {}},
                "spec": {"unschedulable": cordoned},
                "status": {
                    "allocatable": {"nvidia.com/gpu": "8"},
                    "conditions": [{"type": "Ready", "status": ready}],
                },
            }
        )

    views = Views(nodes=[node("a"), node("b", ready="False"), node("c", cordoned=True)], pods=[],
                  topologies={})  # fmt: skip
    assert node_available(views, "a")
    assert not node_available(views, "b") and not node_available(views, "c")
    assert not node_available(views, "gone")
