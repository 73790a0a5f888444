"""Ids are qualified by their parents; cross-node contradictions become diagnostics."""

from __future__ import annotations

import pytest

from fabricfit.fabric.places import check_domain_spans, check_overlay, qualify
from fabricfit.fabric.schemes import NodeReading, RawTiers
from fabricfit.fabric.topology import FabricPlace


@pytest.mark.parametrize(
    ("tiers", "expected"),
    [
        (RawTiers(), FabricPlace(spine="", nvlink_domain="node:n1")),
        (RawTiers(spine="s"), FabricPlace(spine="s", nvlink_domain="node:n1")),
        (RawTiers(rail_group="rg"), FabricPlace(rail_group="rg", nvlink_domain="node:n1")),
        (
            RawTiers(spine="s", rail_group="rg", rack="r", nvlink_domain="d"),
            FabricPlace(spine="s", rail_group="s/rg", rack="s/rg/r", nvlink_domain="s/rg/d"),
        ),
        (
            RawTiers(spine="c/s", rack="r", nvlink_domain="d"),
            FabricPlace(spine="c/s", rail_group=None, rack="c/s/r", nvlink_domain="c/s/d"),
        ),
        (RawTiers(nvlink_domain="d"), FabricPlace(nvlink_domain="d")),
    ],
)
def test_qualify(tiers: RawTiers, expected: FabricPlace) -> None:
    assert qualify(tiers, "n1") == expected


def test_same_names_under_different_parents_are_different() -> None:
    a = qualify(RawTiers(spine="s", rail_group="su1", rack="r1"), "a")
    b = qualify(RawTiers(spine="s", rail_group="su2", rack="r1"), "b")
    c = qualify(RawTiers(spine="s", rail_group="su1", rack="r1"), "c")
    assert a.rack != b.rack
    assert a.rack == c.rack
    assert qualify(RawTiers(spine="s1", rail_group="l1"), "a").rail_group != (
        qualify(RawTiers(spine="s2", rail_group="l1"), "b").rail_group
    )


def test_default_domain_cannot_collide_with_a_labelled_one() -> None:
    # A node named like a label value, and a labelled domain named like that node.
    alone = qualify(RawTiers(), "d1")
    labelled = qualify(RawTiers(nvlink_domain="d1"), "other")
    assert alone.nvlink_domain != labelled.nvlink_domain
    assert qualify(RawTiers(), "x").nvlink_domain != qualify(RawTiers(), "y").nvlink_domain


def _readings(tiers: dict[str, RawTiers]) -> dict[str, NodeReading]:
    return {name: NodeReading(tiers=t, problems=()) for name, t in tiers.items()}


def test_domain_spanning_rail_groups_is_reported_once() -> None:
    tiers = {
        "a": RawTiers(spine="s", rail_group="su1", nvlink_domain="nvl1"),
        "b": RawTiers(spine="s", rail_group="su2", nvlink_domain="nvl1"),
        "c": RawTiers(spine="s", rail_group="su2", nvlink_domain="nvl1"),
        "d": RawTiers(spine="s", rail_group="su2", nvlink_domain="nvl2"),
    }
    readings = _readings(tiers)
    places = {name: qualify(t, name) for name, t in tiers.items()}
    found = check_domain_spans(readings, places)
    assert len(found) == 1
    assert found[0].node == "a"
    assert "'nvl1' spans rail groups s/su1, s/su2" in found[0].message
    # ...and qualification splits it, so no NVLink is promised across rail groups.
    assert places["a"].nvlink_domain != places["b"].nvlink_domain == places["c"].nvlink_domain


def test_same_domain_name_under_different_spines_is_not_a_span() -> None:
    tiers = {
        "a": RawTiers(spine="b1", rail_group="sb1", nvlink_domain="sb1"),
        "b": RawTiers(spine="b2", rail_group="sb1", nvlink_domain="sb1"),
    }
    places = {name: qualify(t, name) for name, t in tiers.items()}
    assert check_domain_spans(_readings(tiers), places) == []


def _overlay(pairs: dict[str, tuple[RawTiers, RawTiers]]) -> dict[str, NodeReading]:
    return {
        name: NodeReading(tiers=native, problems=(), native=native, provider=provider)
        for name, (native, provider) in pairs.items()
    }


def test_overlay_with_consistent_grouping_under_other_names_is_silent() -> None:
    readings = _overlay(
        {
            "a": (RawTiers(rail_group="su1"), RawTiers(spine="s", rail_group="leaf-a")),
            "b": (RawTiers(rail_group="su1"), RawTiers(spine="s", rail_group="leaf-a")),
            "c": (RawTiers(rail_group="su2"), RawTiers(spine="s", rail_group="leaf-b")),
        }
    )
    assert check_overlay(readings, "topograph") == []


def test_overlay_disagreement_is_reported_both_ways() -> None:
    readings = _overlay(
        {
            "a": (RawTiers(rail_group="su1"), RawTiers(rail_group="leaf-a")),
            "b": (RawTiers(rail_group="su1"), RawTiers(rail_group="leaf-b")),
            "c": (RawTiers(rail_group="su2"), RawTiers(rail_group="leaf-b")),
        }
    )
    messages = [(d.node, d.message) for d in check_overlay(readings, "topograph")]
    assert messages == [
        (
            "a",
            "native rail group 'su1' spans topograph rail groups ['leaf-a', 'leaf-b']; "
            "native labels win",
        ),
        (
            "b",
            "native labels split topograph rail group 'leaf-b' into ['su1', 'su2']; "
            "native labels win",
        ),
    ]


def test_overlay_compares_only_levels_both_sides_label() -> None:
    readings = _overlay(
        {
            "a": (RawTiers(rack="r1"), RawTiers(rail_group="leaf-a")),
            "b": (RawTiers(rack="r1"), RawTiers(rail_group="leaf-b")),
        }
    )
    assert check_overlay(readings, "eks") == []
