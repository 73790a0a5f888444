"""build_snapshot end to end: accounting, ordering, diagnostics, and invariants on any input."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.fabric.snapshot import FactsMemo, build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot, Diagnostic

NodeFactory = Callable[..., dict[str, Any]]  # the `node` fixture of conftest.py
PodFactory = Callable[..., dict[str, Any]]  # the `pod` fixture of conftest.py
NATIVE = "topology.fabricfit.dev/"


def test_free_gpus_subtract_live_pods(node: NodeFactory, pod: PodFactory) -> None:
    nodes = [node("n1"), node("n2"), node("n3", gpus="4")]
    pods = [
        pod("n1", "4"),
        pod("n1", limits="2"),
        pod("n1", "8", phase="Succeeded"),
        pod("n2", "1", init=(("3", None),)),
        pod("n3", "8"),
        pod("elsewhere", "8"),
    ]
    snapshot = build_snapshot(nodes, pods)
    assert [(n.name, n.gpus, n.free_gpus) for n in snapshot.nodes] == [
        ("n1", 8, 2),
        ("n2", 8, 5),
        ("n3", 4, 0),
    ]
    assert [(d.node, "pods hold 8 GPUs" in d.message) for d in snapshot.diagnostics] == [
        ("n3", True)
    ]


def test_nodes_sorted_and_duplicates_reported(node: NodeFactory) -> None:
    snapshot = build_snapshot(
        [node("b"), node("a", gpus="4"), node("a", gpus="2"), {"kind": "Node"}]
    )
    assert [(n.name, n.gpus) for n in snapshot.nodes] == [("a", 4), ("b", 8)]
    assert [d.node for d in snapshot.diagnostics] == ["a", "nodes[3]"]
    assert snapshot.node("a").gpus == 4 and not snapshot.has_node("c")


def test_places_are_qualified_within_parents(node: NodeFactory) -> None:
    def labels(rail_group: str) -> dict[str, str]:
        return {NATIVE + "spine": "s", NATIVE + "rail-group": rail_group, NATIVE + "rack": "r1"}

    snapshot = build_snapshot(
        [node("a", labels("su1")), node("b", labels("su2")), node("c", labels("su1"))]
    )
    racks = {n.name: n.place.rack for n in snapshot.nodes}
    assert racks["a"] == racks["c"] != racks["b"]
    assert snapshot.slot("a", 3).rail_group == "s/su1"
    assert snapshot.node("a").place.nvlink_domain == "node:a"


def test_default_fabric_and_label(node: NodeFactory) -> None:
    nodes = [node("a"), node("b", {NATIVE + "fabric": "gb200-nvl72"})]
    snapshot = build_snapshot(nodes, default_fabric="dgx-h100")
    assert [n.fabric for n in snapshot.nodes] == ["dgx-h100", "gb200-nvl72"]


def test_unknown_scheme_is_an_error_diagnostic_and_detects(node: NodeFactory) -> None:
    nodes = [node("a", {"cloud.google.com/gce-topology-subblock": "sb"})]
    snapshot = build_snapshot(nodes, scheme="azure")
    assert snapshot.scheme == "gke"
    assert snapshot.node("a").place.rail_group == "sb"
    assert [(d.node, d.severity) for d in snapshot.diagnostics] == [("", "error")]


def test_explicit_scheme_is_reported(node: NodeFactory) -> None:
    nodes = [node("a", {"fabric.topograph.run/tier-0": "l1", NATIVE + "rail-group": "su1"})]
    assert build_snapshot(nodes).scheme == "native"
    snapshot = build_snapshot(nodes, scheme="topograph")
    assert snapshot.scheme == "topograph"
    assert snapshot.node("a").place.rail_group == "l1"


def test_native_disagreeing_with_topograph_is_diagnosed(node: NodeFactory) -> None:
    nodes = [
        node("a", {"fabric.topograph.run/tier-0": "l1", NATIVE + "rail-group": "su1"}),
        node("b", {"fabric.topograph.run/tier-0": "l2", NATIVE + "rail-group": "su1"}),
    ]
    snapshot = build_snapshot(nodes)
    assert snapshot.node("a").place.rail_group == snapshot.node("b").place.rail_group == "su1"
    assert [d.node for d in snapshot.diagnostics] == ["a"]
    assert "spans topograph rail groups" in snapshot.diagnostics[0].message


def test_nvlink_domain_across_rail_groups_is_diagnosed_and_split(node: NodeFactory) -> None:
    nodes = [
        node("a", {NATIVE + "rail-group": "su1", NATIVE + "nvlink-domain": "nvl1"}),
        node("b", {NATIVE + "rail-group": "su2", NATIVE + "nvlink-domain": "nvl1"}),
    ]
    snapshot = build_snapshot(nodes)
    assert snapshot.node("a").place.nvlink_domain != snapshot.node("b").place.nvlink_domain
    assert len(snapshot.diagnostics) == 1 and "spans rail groups" in snapshot.diagnostics[0].message


def test_gb200_clique_nodes_share_a_domain(node: NodeFactory) -> None:
    clique = "7b968a6d-c8aa-45e1-9e07-e1e51be99c31"
    nodes = [
        node(f"t{i}", {"nvidia.com/gpu.clique": f"{clique}.{i // 2}"}, gpus="4") for i in range(4)
    ]
    snapshot = build_snapshot(nodes)
    assert snapshot.scheme == "gfd"
    domains = [n.place.nvlink_domain for n in snapshot.nodes]
    assert domains[0] == domains[1] != domains[2] == domains[3]
    assert {n.place.rack for n in snapshot.nodes} == {clique}


def test_inputs_of_the_wrong_type_do_not_raise() -> None:
    cases: tuple[object, ...] = (None, "nodes", {"items": []}, 5)
    for nodes in cases:
        snapshot = build_snapshot(nodes, pods=None)  # type: ignore[arg-type]
        assert snapshot.nodes == ()
        assert len(snapshot.diagnostics) == 2


# --- invariants on arbitrary input -------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
LABEL_KEYS = [
    NATIVE + "spine",
    NATIVE + "rail-group",
    NATIVE + "rack",
    NATIVE + "nvlink-domain",
    NATIVE + "rails",
    NATIVE + "fabric",
    "fabric.topograph.run/tier-0",
    "fabric.topograph.run/tier-1",
    "fabric.topograph.run/tier-2",
    "network.topology.nvidia.com/leaf",
    "network.topology.nvidia.com/block",
    "accelerator.topograph.run/domain",
    "nvidia.com/gpu.clique",
    "cloud.google.com/gce-topology-subblock",
    "topology.k8s.aws/network-node-layer-3",
    "topology.k8s.aws/network-node-layer-1",
]
LABEL_KEY = st.sampled_from(LABEL_KEYS) | st.text(max_size=8) | st.integers() | st.none()
LABEL_VALUES = st.sampled_from(["a", "b", "x.1", "8", "4", "bad value", "", "a/b"]) | JSON
QUANTITIES = st.sampled_from(["8", "4", "0", "-1", "1.5", "8k", "abc", "2"]) | JSON
NAMES = st.sampled_from(["n1", "n2", "n3", "n4"]) | JSON

NODES = st.fixed_dictionaries(
    {
        "metadata": st.fixed_dictionaries(
            {
                "name": NAMES,
                "labels": st.dictionaries(LABEL_KEY, LABEL_VALUES, max_size=5),
            }
        )
        | JSON,
        "spec": st.fixed_dictionaries({"unschedulable": JSON, "taints": JSON}) | JSON,
        "status": st.fixed_dictionaries(
            {
                "allocatable": st.fixed_dictionaries({"nvidia.com/gpu": QUANTITIES}) | JSON,
                "conditions": st.lists(
                    st.fixed_dictionaries({"type": st.just("Ready"), "status": JSON})
                ),
            }
        )
        | JSON,
    }
)
CONTAINERS = st.lists(
    st.fixed_dictionaries(
        {
            "resources": st.fixed_dictionaries(
                {"requests": st.fixed_dictionaries({"nvidia.com/gpu": QUANTITIES})}
            )
            | st.fixed_dictionaries(
                {"limits": st.fixed_dictionaries({"nvidia.com/gpu": QUANTITIES})}
            )
            | JSON,
            "restartPolicy": st.sampled_from(["Always", "Never"]) | JSON,
        }
    )
    | JSON,
    max_size=3,
)
PODS = st.fixed_dictionaries(
    {
        "spec": st.fixed_dictionaries(
            {"nodeName": NAMES, "containers": CONTAINERS, "initContainers": CONTAINERS}
        )
        | JSON,
        "status": st.fixed_dictionaries(
            {"phase": st.sampled_from(["Running", "Succeeded", "Pending"]) | JSON}
        ),
    }
)


def _invariants(snapshot: ClusterSnapshot) -> None:
    names = [n.name for n in snapshot.nodes]
    assert names == sorted(set(names))
    for n in snapshot.nodes:
        assert 0 <= n.free_gpus <= n.gpus
        assert n.rails >= 0 and n.available is (n.unavailable_reason is None)
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in n.labels.items())
    for a in snapshot.nodes:
        for b in snapshot.nodes:
            # Qualified ids nest: sharing a level implies sharing every level above it.
            if a.place.rail_group is not None and a.place.rail_group == b.place.rail_group:
                assert a.place.spine == b.place.spine
            if a.place.rack is not None and a.place.rack == b.place.rack:
                assert (a.place.rail_group, a.place.spine) == (b.place.rail_group, b.place.spine)
            if a.place.nvlink_domain == b.place.nvlink_domain:
                assert (a.place.rail_group, a.place.spine) == (b.place.rail_group, b.place.spine)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(NODES | JSON, max_size=6),
    st.lists(PODS | JSON, max_size=6),
    st.sampled_from(
        ["auto", "native", "topograph", "gfd", "gke", "eks", "oke", "coreweave", "bogus"]
    ),
)
def test_never_raises_and_keeps_invariants(nodes: list[Any], pods: list[Any], scheme: str) -> None:
    snapshot = build_snapshot(nodes, pods, scheme=scheme)
    _invariants(snapshot)
    assert build_snapshot(nodes, pods, scheme=scheme) == snapshot  # deterministic


@settings(max_examples=100, deadline=None)
@given(st.lists(NODES, max_size=6), st.lists(PODS, max_size=6), st.randoms(use_true_random=False))
def test_input_order_does_not_matter(nodes: list[Any], pods: list[Any], rnd: random.Random) -> None:
    names = [
        str(n["metadata"].get("name")) if isinstance(n["metadata"], dict) else "" for n in nodes
    ]
    if len(set(names)) != len(names):
        return  # duplicates: the first copy wins, which is order-dependent by design
    shuffled_nodes, shuffled_pods = nodes[:], pods[:]
    rnd.shuffle(shuffled_nodes)
    rnd.shuffle(shuffled_pods)
    shuffled, original = build_snapshot(shuffled_nodes, shuffled_pods), build_snapshot(nodes, pods)
    assert (shuffled.nodes, shuffled.scheme) == (original.nodes, original.scheme)
    # Diagnostics of nameless nodes cite their input position; all others must match.
    assert _named(shuffled) == _named(original)


def _named(snapshot: ClusterSnapshot) -> tuple[Diagnostic, ...]:
    return tuple(d for d in snapshot.diagnostics if not d.node.startswith("nodes["))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(NODES | JSON, max_size=6),
    st.lists(NODES | JSON, max_size=6),
    st.lists(PODS, max_size=4),
    st.sampled_from(["auto", "native", "gke", "topograph"]),
)
def test_a_facts_memo_never_changes_the_snapshot(
    first: list[Any], second: list[Any], pods: list[Any], scheme: str
) -> None:
    """Builds through one memo equal builds without it: the same cluster again, another one,
    and one whose node dicts were changed in place after the memo read them."""
    memo = FactsMemo()
    for nodes in (first, first, second, first + second, second):
        assert memo.build_snapshot(nodes, pods, scheme=scheme) == build_snapshot(
            nodes, pods, scheme=scheme
        )
    for raw in first:
        if isinstance(raw, dict) and isinstance(raw.get("status"), dict):
            raw["status"]["allocatable"] = {"nvidia.com/gpu": "3"}
            raw["spec"] = {"unschedulable": True}
    assert memo.build_snapshot(first, pods, scheme=scheme) == build_snapshot(
        first, pods, scheme=scheme
    )


def test_the_memo_reuses_unchanged_nodes_and_drops_gone_ones(node: NodeFactory) -> None:
    memo = FactsMemo()
    nodes = [node("n1"), node("n2"), node("n3", gpus="4")]
    memo.build_snapshot(nodes)
    assert len(memo) == 3
    entries = dict(memo._entries)
    memo.build_snapshot([dict(n) for n in nodes[:2]])  # equal copies: reused
    assert len(memo) == 2
    assert all(memo._entries[k][3] is entries[k][3] for k in ("n1", "n2"))
    changed = node("n2", gpus="2")
    snapshot = memo.build_snapshot([nodes[0], changed])
    assert [n.gpus for n in snapshot.nodes] == [8, 2]
    assert memo._entries["n2"][3] is not entries["n2"][3]


def test_auto_detection_looks_at_the_keys_of_the_whole_cluster() -> None:
    from fabricfit.fabric.schemes import SCHEMES, detect

    gke = {"cloud.google.com/gce-topology-block": "b"}
    native = {NATIVE + "rail-group": "rg"}
    plain = {"kubernetes.io/hostname": "h"}
    for sets in ([plain, gke], [gke, native, plain], [plain], []):
        one_by_one = {n for labels in sets for n, s in SCHEMES.items() if s.matches(labels)}
        resolution = detect(iter(sets))
        assert resolution.native is ("native" in one_by_one)
        provider = resolution.provider.name if resolution.provider else None
        assert provider == ("gke" if "gke" in one_by_one else None)
