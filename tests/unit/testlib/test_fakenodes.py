"""The fake-node description expands into the fabric it describes."""

from __future__ import annotations

from collections import Counter

import pytest

from fabricfit_dev.cluster.fakenodes import CLIQUE_LABEL, FakeFabric, following, node_manifests

NATIVE = "topology.fabricfit.dev/"


def test_counts_and_hierarchy() -> None:
    fabric = FakeFabric(spines=2, rail_groups_per_spine=2, nodes_per_rail_group=8, nodes_per_rack=4)
    nodes = node_manifests(fabric)
    assert len(nodes) == 32
    assert len({n["metadata"]["name"] for n in nodes}) == 32
    groups = Counter(n["metadata"]["labels"][NATIVE + "rail-group"] for n in nodes)
    assert sorted(groups.values()) == [8, 8, 8, 8]
    racks = Counter(n["metadata"]["labels"][NATIVE + "rack"] for n in nodes)
    assert set(racks.values()) == {4}
    spine_of_group = {
        (n["metadata"]["labels"][NATIVE + "rail-group"], n["metadata"]["labels"][NATIVE + "spine"])
        for n in nodes
    }
    assert len(spine_of_group) == 4  # each rail group sits under exactly one spine


def test_gpus_are_allocatable_and_nodes_are_kwok_managed() -> None:
    node = node_manifests(FakeFabric(gpus_per_node=4, nics_per_node=2, nodes_per_rail_group=1))[0]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "4"
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["metadata"]["labels"][NATIVE + "rails"] == "2"


@pytest.mark.parametrize(
    ("scheme", "key"),
    [
        ("topograph", "fabric.topograph.run/tier-0"),
        ("gke", "cloud.google.com/gce-topology-subblock"),
        ("eks", "topology.k8s.aws/network-node-layer-3"),
        ("oke", "oci.oraclecloud.com/rdma.local_block_id"),
        ("coreweave", "ib.coreweave.cloud/leafgroup"),
    ],
)
def test_other_schemes_carry_their_rail_group_key(scheme: str, key: str) -> None:
    nodes = node_manifests(
        FakeFabric(scheme=scheme, rail_groups_per_spine=2, nodes_per_rail_group=2)
    )
    values = [n["metadata"]["labels"][key] for n in nodes]
    assert values[0] == values[1] != values[2] == values[3]
    assert not any(k.startswith(NATIVE) for k in nodes[0]["metadata"]["labels"])


def test_nvlink_domains_group_consecutive_nodes() -> None:
    nodes = node_manifests(
        FakeFabric(
            nodes_per_rail_group=6, rail_groups_per_spine=1, nvlink_domain_nodes=3, gpus_per_node=4
        )
    )
    domains = [n["metadata"]["labels"][NATIVE + "nvlink-domain"] for n in nodes]
    assert domains[:3] == [domains[0]] * 3
    assert domains[3] != domains[0]


def test_a_fabric_after_another_numbers_its_tiers_and_nodes_on() -> None:
    first = FakeFabric(spines=2, rail_groups_per_spine=2, nodes_per_rail_group=8, nodes_per_rack=4)
    second = FakeFabric(rail_groups_per_spine=2, nodes_per_rail_group=6, nodes_per_rack=6,
                        nvlink_domain_nodes=6, origin=following(first))  # fmt: skip
    labels = [n["metadata"]["labels"] for n in node_manifests(second)]
    assert {x[NATIVE + "spine"] for x in labels} == {"spine-2"}
    assert sorted({x[NATIVE + "rail-group"] for x in labels}) == ["rg-4", "rg-5"]
    assert sorted({x[NATIVE + "rack"] for x in labels}) == ["rack-8", "rack-9"]
    before = {n["metadata"]["name"] for n in node_manifests(first)}
    after = [n["metadata"]["name"] for n in node_manifests(second)]
    assert after[0] == "gpu-s2-g4-n0032" and not before & set(after)
    third = node_manifests(FakeFabric(nodes_per_rail_group=1, origin=following(second)))
    assert third[0]["metadata"]["labels"][NATIVE + "rack"] == "rack-10"


@pytest.mark.parametrize("scheme", ["native", "gke"])
def test_the_clique_label_names_each_nvlink_domain_when_asked(scheme: str) -> None:
    shape = {"nodes_per_rail_group": 4, "nvlink_domain_nodes": 2, "scheme": scheme}
    cliques = [
        n["metadata"]["labels"].get(CLIQUE_LABEL)
        for n in node_manifests(FakeFabric(**shape, clique=True))
    ]  # type: ignore[arg-type]
    assert cliques[0] == cliques[1] != cliques[2] == cliques[3]
    uuid, _, clique = str(cliques[0]).rpartition(".")
    assert clique == "1" and [len(part) for part in uuid.split("-")] == [8, 4, 4, 4, 12]
    plain = node_manifests(FakeFabric(**shape))  # type: ignore[arg-type]
    assert all(CLIQUE_LABEL not in n["metadata"]["labels"] for n in plain)
    single = node_manifests(FakeFabric(nodes_per_rail_group=2, clique=True))
    assert all(CLIQUE_LABEL not in n["metadata"]["labels"] for n in single)


@pytest.mark.parametrize("field", ["spines", "nodes_per_rail_group", "nodes_per_rack"])
def test_rejects_non_positive_counts(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        FakeFabric(**{field: 0})  # type: ignore[arg-type]


def test_rejects_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="unknown label scheme"):
        FakeFabric(scheme="azure")
