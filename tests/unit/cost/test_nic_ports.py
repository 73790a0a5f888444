"""NIC ports behind a rail (``nic_ports_per_rail``): NCCL's tuner sees each port as a NIC and runs
a channel on it, so its per-channel tree caps bind later and a 2-node tree wins where 200G rails
alone keep ring; what a rail moves, and everything inside one node, stays the same."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.cost import Collective, GroupShape, estimate_shape, summarize_group
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import GpuSlot

A100 = get_profile("dgx-a100")
TWO_PORTS = dataclasses.replace(A100, name="a100-2x100g", nic_ports_per_rail=2)
MIB, GIB = 1 << 20, 1 << 30


def shape(nodes: int, gpus: int = 8) -> GroupShape:
    return summarize_group(
        [GpuSlot(f"n{n}", j, j, f"n{n}", "su0", "s0") for n in range(nodes) for j in range(gpus)]
    )


def test_two_100g_ports_per_gpu_make_nccl_run_tree_on_two_nodes() -> None:
    # 16 channels of 100G: the tree's per-channel cap (23.6 GB/s on Ampere at 2 nodes) no longer
    # binds, so NCCL's tuner prefers tree, as OCI's BM.GPU4.8 sweep shows (busbw above what ring
    # can move through 1.6 Tb/s)
    for size in (32 * MIB, 8 * GIB):
        assert estimate_shape(Collective.ALL_REDUCE, size, shape(2), A100).algorithm == "ring"
        assert estimate_shape(Collective.ALL_REDUCE, size, shape(2), TWO_PORTS).algorithm == "tree"


@pytest.mark.parametrize("nodes", [2, 4])
def test_the_rail_rate_is_the_same(nodes: int) -> None:
    for size in (MIB, GIB):
        one = estimate_shape(Collective.ALL_REDUCE, size, shape(nodes), A100, algorithm="ring")
        two = estimate_shape(Collective.ALL_REDUCE, size, shape(nodes), TWO_PORTS, algorithm="ring")
        assert one.seconds == two.seconds


def test_inside_one_node_ports_change_nothing() -> None:
    for collective in Collective:
        for size in (8, MIB, GIB):
            assert estimate_shape(collective, size, shape(1), A100) == estimate_shape(
                collective, size, shape(1), TWO_PORTS
            )
