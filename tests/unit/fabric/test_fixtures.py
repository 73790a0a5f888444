"""The checked-in node dumps load and map onto the tiers their README promises."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from fabricfit.fabric.documents import load_objects
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nodes"


def snapshot_of(name: str, pods: str | None = None) -> ClusterSnapshot:
    nodes = load_objects((FIXTURES / name).read_text())
    pod_objects = load_objects((FIXTURES / pods).read_text()) if pods else []
    return build_snapshot(nodes, pod_objects)


def groups(snapshot: ClusterSnapshot, level: str) -> Counter[str | None]:
    return Counter(getattr(n.place, level) for n in snapshot.nodes)


@pytest.mark.parametrize(
    ("name", "scheme", "nodes", "spines", "rail_groups"),
    [
        (
            "native-h100-16.json",
            "native",
            16,
            {"spine-a": 16},
            {"spine-a/su1": 8, "spine-a/su2": 8},
        ),
        (
            "topograph-v1-h200-16.yaml",
            "topograph",
            16,
            {"core-1/spine-1": 16},
            {"core-1/spine-1/leaf-01": 8, "core-1/spine-1/leaf-02": 8},
        ),
        ("gke-a3ultra-12.json", "gke", 12, None, [6, 6]),
        ("eks-p5-12.yaml", "eks", 12, None, [3, 3, 3, 3]),
    ],
)
def test_fixture_tiers(
    name: str,
    scheme: str,
    nodes: int,
    spines: dict[str, int] | None,
    rail_groups: dict[str, int] | list[int],
) -> None:
    snapshot = snapshot_of(name)
    assert snapshot.scheme == scheme
    assert snapshot.diagnostics == ()
    assert len(snapshot.nodes) == nodes
    assert all(n.gpus == 8 and n.rails == 8 for n in snapshot.nodes)
    assert all(n.place.nvlink_domain == f"node:{n.name}" for n in snapshot.nodes)
    if spines is not None:
        assert groups(snapshot, "spine") == spines
    if isinstance(rail_groups, dict):
        assert groups(snapshot, "rail_group") == rail_groups
    else:
        assert sorted(groups(snapshot, "rail_group").values()) == rail_groups


def test_eks_spine_folds_layer_1_and_2() -> None:
    snapshot = snapshot_of("eks-p5-12.yaml")
    assert sorted(groups(snapshot, "spine").values()) == [6, 6]
    assert all(n.place.spine.startswith("nn-e50490a237cb0f01a/") for n in snapshot.nodes)


def test_native_fixture_racks_repeat_names_under_different_rail_groups() -> None:
    snapshot = snapshot_of("native-h100-16.json")
    assert groups(snapshot, "rack") == {
        "spine-a/su1/r1": 4,
        "spine-a/su1/r2": 4,
        "spine-a/su2/r1": 4,
        "spine-a/su2/r2": 4,
    }
    assert {n.fabric for n in snapshot.nodes} == {"dgx-h100"}


def test_native_fixture_availability_and_pods() -> None:
    snapshot = snapshot_of("native-h100-16.json", "native-h100-16-pods.json")
    unavailable = {n.name: n.unavailable_reason for n in snapshot.nodes if not n.available}
    assert unavailable == {
        "dgx-h100-015": "NotReady (node status Unknown)",
        "dgx-h100-016": "cordoned",
    }
    free = {n.name: n.free_gpus for n in snapshot.nodes if n.free_gpus != n.gpus}
    assert free == {"dgx-h100-001": 0, "dgx-h100-002": 0, "dgx-h100-003": 1, "dgx-h100-009": 7}
    assert {t.effect for t in snapshot.node("dgx-h100-015").taints} == {"NoSchedule", "NoExecute"}
    assert snapshot.diagnostics == ()
