"""Kueue's fuller vocabulary: a rail-group slice layer (multi-layer with the TP slice) for plans
that span rail groups, per-PodSet fitting of layers, and podset groups for leader + workers."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.constants import (
    HOSTNAME_LABEL,
    KUEUE_PODSET_GROUP,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_CONSTRAINTS,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    LABEL_NVLINK_DOMAIN,
    LABEL_RACK,
    LABEL_RAIL_GROUP,
    LABEL_SPINE,
)
from fabricfit.api.models import Parallelism
from fabricfit.placement.layout import build_layout
from fabricfit.render.kueue import (
    build_kueue_annotations,
    fit_to_podset,
    group_podsets,
    podset_group_name,
    slice_annotations,
    slice_layers,
)

KEYS = {
    "spine": LABEL_SPINE,
    "rail_group": LABEL_RAIL_GROUP,
    "rack": LABEL_RACK,
    "nvlink_domain": LABEL_NVLINK_DOMAIN,
    "hostname": HOSTNAME_LABEL,
}


def _node(name: str, spine: str, rail_group: str, domain: str) -> dict[str, str]:
    return {LABEL_SPINE: spine, LABEL_RAIL_GROUP: rail_group, LABEL_RACK: f"r-{domain}",
            LABEL_NVLINK_DOMAIN: domain, HOSTNAME_LABEL: name}  # fmt: skip


# Spine s0: rail groups g0 (a0..a3) and g1 (b0..b3); NVLink domains of two nodes. Spine s1
# has a rail group also called g0 (c0, c1): values are only unique within their parent.
NODES = {
    **{f"a{i}": _node(f"a{i}", "s0", "g0", f"da{i // 2}") for i in range(4)},
    **{f"b{i}": _node(f"b{i}", "s0", "g1", f"db{i // 2}") for i in range(4)},
    **{f"c{i}": _node(f"c{i}", "s1", "g0", "dc") for i in range(2)},
}
A, B = ["a0", "a1", "a2", "a3"], ["b0", "b1", "b2", "b3"]


def annotate(pods: list[str], tensor: int, gpus_per_pod: int = 8) -> dict[str, str]:
    world = len(pods) * gpus_per_pod
    layout = build_layout(
        Parallelism(tensor=tensor, data=world // tensor), gpus_per_pod, "tp-cp-ep-dp-pp"
    )
    return build_kueue_annotations(
        pods,
        tensor_groups=layout.groups["tensor"],
        gpus_per_pod=gpus_per_pod,
        tensor=tensor,
        tier_keys=KEYS,
        node_labels=NODES,
    )


def constraints(*layers: tuple[str, int]) -> dict[str, str]:
    listed = [{"topology": level, "size": size} for level, size in layers]
    return {KUEUE_SLICE_CONSTRAINTS: json.dumps(listed, separators=(",", ":"))}


CASES = [
    (
        "two rail groups, TP pairs in NVLink domains: rail group outside, NVLink inside",
        annotate(A + B, tensor=16),
        {KUEUE_REQUIRED_TOPOLOGY: LABEL_SPINE,
         **constraints((LABEL_RAIL_GROUP, 4), (LABEL_NVLINK_DOMAIN, 2))},
    ),
    (
        "two rail groups, TP inside a pod: one rail-group layer",
        annotate(A + B, tensor=8),
        {KUEUE_REQUIRED_TOPOLOGY: LABEL_SPINE,
         KUEUE_SLICE_REQUIRED_TOPOLOGY: LABEL_RAIL_GROUP, KUEUE_SLICE_SIZE: "4"},
    ),
    (
        "rail groups interleaved in pod order: no rail-group layer",
        annotate(["a0", "b0", "a1", "b1", "a2", "b2", "a3", "b3"], tensor=8),
        {KUEUE_REQUIRED_TOPOLOGY: LABEL_SPINE},
    ),
    (
        "blocks of two only, as wide as the TP slice: the TP slice alone",
        annotate(["a0", "a1", "b0", "b1", "a2", "a3", "b2", "b3"], tensor=16),
        {KUEUE_REQUIRED_TOPOLOGY: LABEL_SPINE,
         KUEUE_SLICE_REQUIRED_TOPOLOGY: LABEL_NVLINK_DOMAIN, KUEUE_SLICE_SIZE: "2"},
    ),
    (
        "two spines: preferred rail group plus both layers",
        annotate([*A, "c0", "c1", "c0", "c1"], tensor=16),
        {KUEUE_PREFERRED_TOPOLOGY: LABEL_RAIL_GROUP,
         **constraints((LABEL_RAIL_GROUP, 4), (LABEL_NVLINK_DOMAIN, 2))},
    ),
    (
        "one rail group: required there, no outer layer",
        annotate(A, tensor=16),
        {KUEUE_REQUIRED_TOPOLOGY: LABEL_RAIL_GROUP,
         KUEUE_SLICE_REQUIRED_TOPOLOGY: LABEL_NVLINK_DOMAIN, KUEUE_SLICE_SIZE: "2"},
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "got", "expected"), CASES, ids=[c[0] for c in CASES])
def test_rail_group_layer(name: str, got: dict[str, str], expected: dict[str, str]) -> None:
    assert got == expected


def test_the_outer_layer_is_the_largest_aligned_block() -> None:
    # Blocks of 4 stay in one rail group, blocks of 8 do not: 4 wins over 2.
    pods = A + B + A + B
    got = annotate(pods, tensor=8)
    assert got[KUEUE_SLICE_REQUIRED_TOPOLOGY] == LABEL_RAIL_GROUP
    assert got[KUEUE_SLICE_SIZE] == "4"


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (None, constraints((LABEL_RAIL_GROUP, 4), (LABEL_NVLINK_DOMAIN, 2))),
        (8, constraints((LABEL_RAIL_GROUP, 4), (LABEL_NVLINK_DOMAIN, 2))),
        (6, {KUEUE_SLICE_REQUIRED_TOPOLOGY: LABEL_NVLINK_DOMAIN, KUEUE_SLICE_SIZE: "2"}),
        (2, {KUEUE_SLICE_REQUIRED_TOPOLOGY: LABEL_NVLINK_DOMAIN, KUEUE_SLICE_SIZE: "2"}),
        (1, {}),
        (3, {}),
    ],
)
def test_fit_to_podset_keeps_the_layers_that_tile(
    count: int | None, expected: dict[str, str]
) -> None:
    base = {KUEUE_REQUIRED_TOPOLOGY: LABEL_SPINE}
    annotations = {**base, **constraints((LABEL_RAIL_GROUP, 4), (LABEL_NVLINK_DOMAIN, 2))}
    assert fit_to_podset(annotations, count) == {**base, **expected}


@pytest.mark.parametrize(
    "value",
    ["not json", "[]", "{}", '[{"topology": "x"}]', '[{"topology": "", "size": 2}]',
     '[{"topology": "x", "size": 0}]', '[{"topology": "x", "size": "2"}]', "[1]",
     json.dumps([{"topology": "x", "size": 1}] * 4)],
)  # fmt: skip
def test_malformed_constraints_are_dropped(value: str) -> None:
    annotations = {KUEUE_PREFERRED_TOPOLOGY: LABEL_RAIL_GROUP, KUEUE_SLICE_CONSTRAINTS: value}
    assert slice_layers(annotations) is None
    assert fit_to_podset(annotations, None) == {KUEUE_PREFERRED_TOPOLOGY: LABEL_RAIL_GROUP}


@given(
    st.lists(
        st.tuples(st.sampled_from([LABEL_RAIL_GROUP, LABEL_RACK, LABEL_NVLINK_DOMAIN]),
                  st.integers(1, 64)),
        max_size=3,
    )
)  # fmt: skip
def test_layers_round_trip_through_annotations(layers: list[tuple[str, int]]) -> None:
    assert slice_layers(slice_annotations(layers)) == layers


REQ = {KUEUE_REQUIRED_TOPOLOGY: LABEL_RAIL_GROUP}
TP = {KUEUE_SLICE_REQUIRED_TOPOLOGY: LABEL_NVLINK_DOMAIN, KUEUE_SLICE_SIZE: "2"}


@pytest.mark.parametrize(
    ("per_podset", "counts", "grouped"),
    [
        ([REQ, REQ], [1, 3], True),
        ([REQ, REQ], [3, 1], True),
        ([{KUEUE_PREFERRED_TOPOLOGY: LABEL_SPINE}] * 2, [1, 7], True),
        ([REQ, REQ], [2, 3], False),  # Kueue needs a single-pod PodSet in a group
        ([REQ, REQ, REQ], [1, 1, 3], False),  # and exactly two PodSets
        ([REQ], [1], False),
        ([REQ, {**REQ, **TP}], [1, 4], False),  # slices and groups exclude each other
        ([REQ, {}], [1, 4], False),  # a group needs a level on both
        ([REQ, REQ], [1, None], True),
    ],
)
def test_group_podsets(
    per_podset: list[dict[str, str]], counts: list[int | None], grouped: bool
) -> None:
    got = group_podsets(per_podset, counts, podset_group_name("llama"))
    expected = [{**a, KUEUE_PODSET_GROUP: "fabricfit-llama"} if grouped else a for a in per_podset]
    assert got == expected


def test_group_name_is_never_a_number() -> None:
    assert not podset_group_name("123").isdigit()
