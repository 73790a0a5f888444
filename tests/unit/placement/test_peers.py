"""The peer placers do what the schedulers they stand for do (placement.peers)."""

from __future__ import annotations

from fabricfit.placement.peers import PEERS, kueue_bestfit, spread
from fabricfit.placement.slots import build_leaf_domains
from unit.placement.clusters import full_except, make_cluster


def domains_of(used: dict[str, int], gpus_per_pod: int = 8, **shape: int) -> tuple:
    snapshot = make_cluster(**shape, used=used)
    nodes = [n for n in snapshot.nodes if n.free_gpus >= gpus_per_pod]
    return build_leaf_domains(nodes, gpus_per_pod, {})


def test_kueue_bestfit_takes_the_tightest_rail_group_that_holds_the_job() -> None:
    # rail group 0 (n000-n003) fully free, rail group 1 (n004-n007) has 2 free nodes
    domains = domains_of({"n004": 8, "n005": 8})
    chosen = kueue_bestfit(domains, 2)
    assert chosen is not None
    assert [s.node for s in chosen] == ["n006", "n007"]


def test_kueue_bestfit_spans_rail_groups_most_free_first_and_ranks_lexicographically() -> None:
    domains = domains_of({"n004": 8})  # 4 + 3 free nodes
    chosen = kueue_bestfit(domains, 6)
    assert chosen is not None
    nodes = [s.node for s in chosen]
    assert nodes[:4] == ["n000", "n001", "n002", "n003"]  # the most free rail group whole
    assert len(set(nodes)) == 6 and nodes == sorted(nodes)


def test_kueue_bestfit_gives_partial_pods_the_lowest_free_gpus_of_a_node() -> None:
    domains = domains_of(full_except(8, ("n001",)), gpus_per_pod=2)
    chosen = kueue_bestfit(domains, 3)
    assert chosen is not None
    assert [(s.node, s.gpus) for s in chosen] == [
        ("n001", (0, 1)),
        ("n001", (2, 3)),
        ("n001", (4, 5)),
    ]


def test_spread_puts_each_pod_on_the_most_free_node() -> None:
    domains = domains_of(
        {"n000": 4}, gpus_per_pod=4, nodes_per_rail_group=2, rail_groups_per_spine=1
    )
    chosen = spread(domains, 3)
    assert chosen is not None
    # n001 has 2 free windows, n000 one: n001, then a tie (n000 by name), then n001
    assert [s.node for s in chosen] == ["n001", "n000", "n001"]


def test_peers_say_none_when_the_job_does_not_fit() -> None:
    domains = domains_of(full_except(8, ("n002",)))
    for name, peer in PEERS.items():
        assert peer(domains, 2) is None, name
        assert peer(domains, 1) is not None, name
