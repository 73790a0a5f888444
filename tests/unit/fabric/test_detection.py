"""What the label scheme finds: tiers, their domains and free GPUs, the keys read, unlabelled
nodes; the same cluster read with the wrong scheme is flat."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.constants import LABEL_NVLINK_DOMAIN, LABEL_RAIL_GROUP, LABEL_SPINE
from fabricfit.fabric.detection import describe, detect_tiers, labelled_tiers
from fabricfit.fabric.snapshot import build_snapshot
from unit.fabric.conftest import build_node

GKE_BLOCK = "cloud.google.com/gce-topology-block"
GKE_SUBBLOCK = "cloud.google.com/gce-topology-subblock"


def pod_on(node: str, gpus: int) -> dict[str, object]:
    return {
        "metadata": {"name": f"p-{node}", "namespace": "t"},
        "spec": {"nodeName": node, "containers": [
            {"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]},
        "status": {"phase": "Running"},
    }  # fmt: skip


def native_cluster() -> list[dict[str, object]]:
    nodes = []
    for i in range(6):
        labels = {LABEL_SPINE: "s1", LABEL_RAIL_GROUP: f"rg{i // 3}"}
        if i < 4:
            labels[LABEL_NVLINK_DOMAIN] = f"nvl{i // 2}"
        nodes.append(build_node(f"n{i}", labels))
    nodes.append(build_node("bare"))
    nodes.append(build_node("cordoned", {LABEL_SPINE: "s1"}, unschedulable=True))
    return nodes


def test_tiers_domains_and_free_gpus() -> None:
    snapshot = build_snapshot(native_cluster(), [pod_on("n0", 3)], scheme="auto")
    found = detect_tiers(snapshot)
    assert found.scheme == "native" and found.found
    tiers = {t.tier: t for t in found.tiers}
    assert set(tiers) == {"spine", "rail_group", "nvlink_domain"}
    assert tiers["rail_group"].label_keys == (LABEL_RAIL_GROUP,)
    rail_groups = {d.id: (d.nodes, d.gpus, d.free_gpus) for d in tiers["rail_group"].domains}
    assert rail_groups == {"s1/rg0": (3, 24, 21), "s1/rg1": (3, 24, 24)}
    spine = tiers["spine"].domains[0]
    assert (spine.id, spine.nodes, spine.gpus, spine.free_gpus) == ("s1", 7, 56, 45)
    # nvl1 has a node in each rail group: ids are qualified by their parents, so two domains.
    nvlink = [d.id for d in tiers["nvlink_domain"].domains]
    assert nvlink == ["s1/rg0/nvl0", "s1/rg0/nvl1", "s1/rg1/nvl1"]
    assert found.unlabelled == ("bare",)
    assert (found.nodes, found.gpus, found.free_gpus) == (8, 64, 53)
    assert "1 of 8 nodes carry no topology label" in describe(found)


def test_the_wrong_scheme_finds_nothing_and_says_so() -> None:
    nodes = [build_node(f"g{i}", {GKE_BLOCK: "b", GKE_SUBBLOCK: f"sb{i % 2}"}) for i in range(4)]
    right = detect_tiers(build_snapshot(nodes, scheme="auto"), "auto")
    assert right.scheme == "gke"
    assert {t.tier: t.label_keys for t in right.tiers} == {
        "spine": (GKE_BLOCK,), "rail_group": (GKE_SUBBLOCK,)
    }  # fmt: skip
    wrong = detect_tiers(build_snapshot(nodes, scheme="native"), "native")
    assert not wrong.found and wrong.tiers == ()
    assert wrong.unlabelled == ("g0", "g1", "g2", "g3")
    assert "finds no topology tier" in describe(wrong)


@given(st.lists(st.sampled_from(["", "a", "b"]), min_size=1, max_size=12))
def test_every_node_is_unlabelled_or_in_a_domain_of_each_tier_it_carries(groups: list[str]) -> None:
    nodes = [build_node(f"n{i}", {LABEL_RAIL_GROUP: g} if g else {}) for i, g in enumerate(groups)]
    snapshot = build_snapshot(nodes, scheme="native")
    found = detect_tiers(snapshot)
    counted = {t.tier: sum(d.nodes for d in t.domains) for t in found.tiers}
    assert counted.get("rail_group", 0) == sum(1 for g in groups if g)
    assert len(found.unlabelled) == sum(1 for g in groups if not g)
    for node in snapshot.nodes:
        assert (node.name in found.unlabelled) == (labelled_tiers(node.place) == ())
