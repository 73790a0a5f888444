"""A FactsMemo trusting identity (the operator's): builds of a cluster whose objects are replaced,
never edited, equal fresh builds; an unchanged cluster gives the same snapshot object back; the
facts token is shared exactly while the nodes' facts are."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.fabric.snapshot import FactsMemo, build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from unit.fabric.conftest import build_node, build_pod
from unit.fabric.test_snapshot import JSON, NODES, PODS

# (what, index, new object): replace or drop the node/pod at index (mod length), or add one.
CHANGES = st.lists(
    st.tuples(
        st.sampled_from(["node", "drop node", "pod", "drop pod", "nothing"]),
        st.integers(min_value=0, max_value=9),
        NODES | JSON,
        PODS | JSON,
    ),
    max_size=8,
)


def _facts(snapshot: ClusterSnapshot) -> list[Any]:
    return [dataclasses.replace(n, free_gpus=0) for n in snapshot.nodes]


def _apply(change: tuple[str, int, Any, Any], nodes: list[Any], pods: list[Any]) -> None:
    what, index, node, pod = change
    target, new = (nodes, node) if what.endswith("node") else (pods, pod)
    if what == "nothing":
        return
    if what.startswith("drop"):
        if target:
            del target[index % len(target)]
    elif target and index % 2:
        target[index % len(target)] = new  # an event replaces the object
    else:
        target.append(new)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(NODES | JSON, max_size=6),
    st.lists(PODS | JSON, max_size=6),
    CHANGES,
    st.sampled_from(["auto", "native", "gke", "topograph"]),
)
def test_trusting_identity_equals_a_fresh_build(
    nodes: list[Any], pods: list[Any], changes: list[tuple[str, int, Any, Any]], scheme: str
) -> None:
    memo = FactsMemo(trust_identity=True)
    last = memo.build_snapshot(nodes, pods, scheme=scheme)
    assert last == build_snapshot(nodes, pods, scheme=scheme)
    for change in changes:
        _apply(change, nodes, pods)
        built = memo.build_snapshot(list(nodes), list(pods), scheme=scheme)
        assert built == build_snapshot(nodes, pods, scheme=scheme)
        if built.facts_token is last.facts_token:
            assert _facts(built) == _facts(last)
        last = built


def test_an_unchanged_cluster_gives_the_same_snapshot_back() -> None:
    memo = FactsMemo(trust_identity=True)
    nodes = [build_node("a"), build_node("b")]
    pods = [build_pod("a", "4", name="p1")]
    first = memo.build_snapshot(nodes, pods)
    assert memo.build_snapshot(list(nodes), list(pods)) is first
    bound = memo.build_snapshot(nodes, [*pods, build_pod("b", "8", name="p2")])
    assert bound is not first and [n.free_gpus for n in bound.nodes] == [4, 0]
    assert bound.facts_token is first.facts_token  # only the GPUs in use changed
    assert bound.node("a") is first.node("a")  # and only node b's NodeInfo is new
    cordoned = memo.build_snapshot([nodes[0], build_node("b", unschedulable=True)], pods)
    assert cordoned.facts_token is not first.facts_token


def test_without_trust_an_object_edited_in_place_is_read_again() -> None:
    memo = FactsMemo()
    nodes = [build_node("a")]
    first = memo.build_snapshot(nodes)
    nodes[0]["spec"]["unschedulable"] = True
    second = memo.build_snapshot(nodes)
    assert not second.node("a").available and first.node("a").available
    assert second.facts_token is not first.facts_token


def test_snapshots_built_without_a_memo_never_share_a_token() -> None:
    nodes = [build_node("a")]
    assert build_snapshot(nodes).facts_token is not build_snapshot(nodes).facts_token
