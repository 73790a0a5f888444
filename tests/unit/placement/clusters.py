"""Synthetic clusters for placement tests, built straight from the frozen fabric types."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fabricfit.fabric.topology import ClusterSnapshot, FabricPlace, NodeInfo, Taint


def make_cluster(
    *,
    spines: int = 1,
    rail_groups_per_spine: int = 2,
    nodes_per_rail_group: int = 4,
    rack_nodes: int = 4,
    gpus: int = 8,
    rails: int | None = None,
    domain_nodes: int = 1,
    used: Mapping[str, int] | None = None,
    interleave: bool = False,
    unavailable: tuple[str, ...] = (),
    labels: Mapping[str, Mapping[str, str]] | None = None,
    taints: Mapping[str, tuple[Taint, ...]] | None = None,
    with_rail_groups: bool = True,
) -> ClusterSnapshot:
    """A leaf-spine cluster; node ``n{i:03d}``. ``interleave`` deals nodes to rail groups round
    robin by name, so consecutive names sit in different rail groups."""
    used = used or {}
    labels = labels or {}
    taints = taints or {}
    groups = spines * rail_groups_per_spine
    total = groups * nodes_per_rail_group
    nodes = []
    for i in range(total):
        group = i % groups if interleave else i // nodes_per_rail_group
        slot_in_group = i // groups if interleave else i % nodes_per_rail_group
        spine = f"s{group // rail_groups_per_spine}"
        rail_group = f"{spine}/rg{group}" if with_rail_groups else None
        rack = f"{spine}/rg{group}/r{slot_in_group // rack_nodes}"
        domain = f"{rack}/d{slot_in_group // domain_nodes}" if domain_nodes > 1 else f"n{i:03d}"
        name = f"n{i:03d}"
        nodes.append(
            NodeInfo(
                name=name,
                gpus=gpus,
                free_gpus=gpus - used.get(name, 0),
                rails=rails if rails is not None else gpus,
                place=FabricPlace(
                    spine=spine, rail_group=rail_group, rack=rack, nvlink_domain=domain
                ),
                available=name not in unavailable,
                unavailable_reason="NotReady" if name in unavailable else None,
                fabric="dgx-h100",
                labels=MappingProxyType(dict(labels.get(name, {}))),
                taints=taints.get(name, ()),
            )
        )
    return ClusterSnapshot(nodes=tuple(nodes), scheme="native")


def full_except(snapshot_nodes: int, free: tuple[str, ...], gpus: int = 8) -> dict[str, int]:
    """``used`` mapping where every node is full except the named ones."""
    return {f"n{i:03d}": gpus for i in range(snapshot_nodes) if f"n{i:03d}" not in free}
