"""Pod slots, blocks and hierarchical candidates (no scoring involved)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.models import Parallelism
from fabricfit.placement.candidates import (
    FreeSlots,
    generate_candidates,
    job_blocks,
    pack_blocks,
)
from fabricfit.placement.layout import build_layout
from fabricfit.placement.scopes import unit_capacity
from fabricfit.placement.slots import PodSlot, build_leaf_domains, node_slots, position_major
from unit.placement.clusters import full_except, make_cluster


def test_blocks_are_pipeline_stages() -> None:
    layout = build_layout(Parallelism(tensor=8, pipeline=2, data=4), 8, "tp-cp-ep-dp-pp")
    assert job_blocks(layout) == (((0,), (1,), (2,), (3,)), ((4,), (5,), (6,), (7,)))


def test_units_span_tensor_groups_larger_than_a_pod() -> None:
    layout = build_layout(Parallelism(tensor=8, data=2), 4, "tp-cp-ep-dp-pp")
    assert job_blocks(layout) == (((0, 1), (2, 3)),)


def test_slots_use_top_windows_of_partly_used_nodes() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=1, used={"n000": 3})
    slots = node_slots(snapshot.nodes[0], 4, {})
    assert [s.gpus for s in slots] == [(4, 5, 6, 7)]
    slots = node_slots(snapshot.nodes[0], 2, {"n000": 1})
    assert [s.gpus for s in slots] == [(4, 5), (6, 7)]
    odd = node_slots(snapshot.nodes[0], 3, {})
    assert [s.gpus for s in odd] == [(3, 4, 5)]


def test_interleaved_names_grouped_by_rail_group() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4, interleave=True)
    domains = build_leaf_domains(snapshot.nodes, 8, {})
    assert [d.nodes for d in domains] == [
        ("n000", "n002", "n004", "n006"),
        ("n001", "n003", "n005", "n007"),
    ]


def test_position_major_takes_same_window_on_every_node() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2)
    domains = build_leaf_domains(snapshot.nodes, 4, {})
    ordered = position_major(domains[0].slots)
    assert [(s.node, s.gpus[0]) for s in ordered] == [
        ("n000", 4),
        ("n001", 4),
        ("n000", 0),
        ("n001", 0),
    ]


def test_leaf_scope_prefers_rail_group_that_fits_exactly() -> None:
    free = ("n000", "n004", "n005", "n006", "n007")
    snapshot = make_cluster(
        rail_groups_per_spine=2, nodes_per_rail_group=4, used=full_except(8, free)
    )
    layout = build_layout(Parallelism(tensor=8, data=4), 8, "tp-cp-ep-dp-pp")
    domains = build_leaf_domains(snapshot.nodes, 8, {})
    candidates = generate_candidates(job_blocks(layout), domains)
    assert candidates[0].label.startswith("leaf")
    assert {s.node for s in candidates[0].slots} == {"n004", "n005", "n006", "n007"}


def test_units_never_split_nvlink_domains() -> None:
    snapshot = make_cluster(
        rail_groups_per_spine=1, nodes_per_rail_group=4, gpus=4, domain_nodes=2, used={"n001": 4}
    )
    layout = build_layout(Parallelism(tensor=8, data=1), 4, "tp-cp-ep-dp-pp")
    domains = build_leaf_domains(snapshot.nodes, 4, {})
    slots = pack_blocks(job_blocks(layout), domains, "node", "best-fit")
    assert slots is not None
    assert {s.nvlink_domain for s in slots} == {slots[0].nvlink_domain}
    assert {s.node for s in slots} == {"n002", "n003"}


def test_pack_returns_none_without_room() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2)
    layout = build_layout(Parallelism(tensor=8, data=3), 8, "tp-cp-ep-dp-pp")
    domains = build_leaf_domains(snapshot.nodes, 8, {})
    assert pack_blocks(job_blocks(layout), domains, "node", "first-fit") is None


def _regrouped_take(free: list[PodSlot], size: int) -> list[PodSlot]:
    """What the packer did before ``FreeSlots``: regroup the remaining slots for every unit."""
    if size == 1:
        return [free[0]]
    by_domain: dict[str, list[PodSlot]] = {}
    for slot in free:
        by_domain.setdefault(slot.nvlink_domain, []).append(slot)
    return next(s for s in by_domain.values() if len(s) >= size)[:size]


@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=40),
    st.integers(1, 3),
    st.lists(st.integers(1, 3), max_size=40),
)
def test_free_slots_take_what_regrouping_took(
    domains: list[int], unit_pods: int, sizes: list[int]
) -> None:
    slots = [
        PodSlot(
            node=f"n{i}", position=0, gpus=(0,), spine="s", leaf="l", rack="r",
            nvlink_domain=f"d{d}",
        )
        for i, d in enumerate(domains)
    ]  # fmt: skip
    free = FreeSlots(slots, unit_pods)
    reference = list(slots)
    for size in (min(s, unit_pods) for s in sizes):
        if unit_capacity(reference, size) == 0:
            break  # the packer never asks without room
        expected = _regrouped_take(reference, size) if unit_pods > 1 else reference[:size]
        assert free.take(size) == expected
        for slot in expected:
            reference.remove(slot)
        assert free.units == unit_capacity(reference, unit_pods)
