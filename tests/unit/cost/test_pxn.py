"""PXN: how NCCL's point-to-point traffic crosses rails, on and off (cost.collectives.sent_shape).

With PXN (NCCL >= 2.12, the default) a send to a GPU of another node leaves on this node's GPU
of the peer's local index, over NVLink, so it stays on the peer's rail when the two pods' windows
start on the same rail; without it each rank sends on its own NIC. Rings and trees are not
affected: each channel leaves every node on the NICs of its own ranks."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.cost import Collective, estimate_collective, estimate_step
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.profiles.ncclsetup import pxn_active, run_env_fields
from fabricfit.fabric.topology import GpuSlot

TAPERED = get_profile("h100-leaf-spine-2to1")
NO_PXN = dataclasses.replace(TAPERED, pxn_enabled=False)
MIB = 1 << 20


def gpu(node: int, index: int, window: int = 0) -> GpuSlot:
    return GpuSlot(
        node=f"n{node}",
        gpu=index,
        rail=index,
        nvlink_domain=f"n{node}",
        rail_group="rg0",
        spine="s0",
        window_rail=window,
    )


def test_an_all_to_all_between_local_indices_stays_on_rail_with_pxn_only() -> None:
    # Expert-parallel peers on GPU 0 of one node and GPU 1 of another (same 0-7 window):
    # PXN relays through GPU 1 of the first node, onto rail 1; without it, rail 0 -> rail 1.
    group = [gpu(0, 0), gpu(1, 1)]
    on = estimate_collective(Collective.ALL_TO_ALL, 64 * MIB, group, TAPERED)
    off = estimate_collective(Collective.ALL_TO_ALL, 64 * MIB, group, NO_PXN)
    assert on.bottleneck != "spine" and off.bottleneck == "spine"
    assert off.seconds > 1.5 * on.seconds


def test_pods_on_different_windows_cross_rails_even_with_pxn() -> None:
    # Pods of 4 GPUs on positions 0-3 of one node and 4-7 of another: NCCL numbers both 0-3,
    # so PXN's relay lands on rail k of the first and rail 4+k of the second.
    group = [gpu(0, 0, window=0), gpu(1, 4, window=4)]
    est = estimate_collective(Collective.SEND_RECV, 64 * MIB, group, TAPERED)
    assert est.bottleneck == "spine"


def test_rings_do_not_change_with_pxn() -> None:
    group = [gpu(0, 0), gpu(0, 1), gpu(1, 1), gpu(1, 2)]  # rail sets {0,1} and {1,2}
    on = estimate_collective(Collective.ALL_REDUCE, 256 * MIB, group, TAPERED)
    off = estimate_collective(Collective.ALL_REDUCE, 256 * MIB, group, NO_PXN)
    assert on.seconds == pytest.approx(off.seconds)


def test_full_node_expert_parallelism_needs_pxn_to_stay_on_the_leaf() -> None:
    # EP 16 over two whole nodes: rank i sends to every GPU j of the other node. With PXN all
    # of it rides rail j; without it the j != i part changes rails and climbs to the spine.
    slots = [gpu(n, i) for n in range(2) for i in range(8)]
    model = ModelShape(hidden_size=4096, layers=8, experts=16, top_k=2, sequence_length=4096)
    parallelism = Parallelism(tensor=1, data=16, expert=16)
    groups = {"expert": [list(range(16))]}
    on = estimate_step(groups, slots, parallelism, model, TAPERED)
    off = estimate_step(groups, slots, parallelism, model, NO_PXN)
    assert on.spine_bytes_per_step == 0.0 and off.spine_bytes_per_step > 0.0
    assert off.by_dimension["expert"] > on.by_dimension["expert"]


def test_the_nccl_environment_turns_pxn_off() -> None:
    assert run_env_fields("NCCL_PXN_DISABLE", "1") == {"pxn_enabled": False}
    assert run_env_fields("NCCL_PXN_DISABLE", "0") == {"pxn_enabled": True}
    assert run_env_fields("NCCL_P2P_PXN_LEVEL", "0") == {"pxn_enabled": False}
    assert run_env_fields("NCCL_P2P_PXN_LEVEL", "2") == {"pxn_enabled": True}
    assert pxn_active(True, None) and pxn_active(True, "2.12.7")
    assert not pxn_active(True, "2.11.4") and not pxn_active(False, None)
