"""Pipeline fill and the NCCL tuning rules behind it: tree / NVLS-tree stages between domains,
NVLS-tree channels and chunks (nvls.cc, enqueue.cc), the proxy hand-off of an LL128 step."""

from __future__ import annotations

import dataclasses

from fabricfit.cost import Collective, GroupShape, estimate_shape, nccl
from fabricfit.fabric.profiles import get_profile

H100 = get_profile("dgx-h100")
NVL72 = get_profile("gb200-nvl72")
B200 = get_profile("dgx-b200")
KIB, MIB = 1 << 10, 1 << 20


def nodes_of_8(domains: int) -> GroupShape:
    return GroupShape(8 * domains, domains, domains, 8, 8, 8, 8, 1, False, 1, True)


def racks(domains: int) -> GroupShape:
    return GroupShape(72 * domains, 18 * domains, domains, 72, 72, 18, 4, 1, False, 1, True)


def test_nvls_tree_channels_and_chunks_follow_nccl() -> None:
    assert nccl.nvls_tree_tuning(nodes_of_8(2), H100) == (16, 128 * KIB)
    assert nccl.nvls_tree_tuning(nodes_of_8(4), H100) == (16, 64 * KIB)  # >= 4 nodes
    assert nccl.nvls_tree_tuning(racks(2), NVL72) == (32, 64 * KIB)  # 2 nodes, ppn >= 16
    assert nccl.nvls_tree_tuning(racks(20), NVL72) == (24, 128 * KIB)  # Grace tray NICs
    assert nccl.nvls_tree_tuning(nodes_of_8(3), B200) == (24, 64 * KIB)  # NIC behind a switch
    # the chunk shrinks to 64 KiB below 4 x ops x chunk and to 32 KiB below 1 x ops x chunk
    ops = 16 * 8
    assert nccl.nvls_tree_loop_bytes(1 << 30, 16, 8, 128 * KIB) == ops * 128 * KIB
    assert nccl.nvls_tree_loop_bytes(32 * MIB, 16, 8, 128 * KIB) == ops * 64 * KIB
    assert nccl.nvls_tree_loop_bytes(4 * MIB, 16, 8, 128 * KIB) == ops * 32 * KIB
    assert nccl.nvls_tree_loop_bytes(32 * MIB, 16, 8, 64 * KIB) == ops * 64 * KIB


def test_tree_fill_grows_with_the_stages_between_domains() -> None:
    def seconds(domains: int, stage: float, algorithm: str) -> float:
        profile = dataclasses.replace(H100, stage_fill_loops=stage)
        return estimate_shape(
            Collective.ALL_REDUCE, 256 * MIB, nodes_of_8(domains), profile, algorithm=algorithm
        ).seconds

    for algorithm in ("nvls", "tree"):
        fill = {d: seconds(d, 1.0, algorithm) - seconds(d, 0.0, algorithm) for d in (2, 16)}
        assert 0 < fill[2] < fill[16], algorithm
    # NVLS-tree at 16 domains: 2 * 4 levels of one loop each on top of the domain's own fill
    assert nccl.tree_stages(nodes_of_8(16)) == 4 + 0.8


def test_an_ll128_step_across_nics_costs_a_simple_network_hop() -> None:
    t = nccl.tiers(nodes_of_8(10), H100, 1.0)
    simple = nccl.ring_latency_us(True, t, 79, 9, nccl.SIMPLE)
    ll128 = nccl.ring_latency_us(True, t, 79, 9, nccl.LL128)
    ll = nccl.ring_latency_us(True, t, 79, 9, nccl.LL)
    base = nccl.BASE_US["ring"]
    assert ll128 - base[nccl.LL128] * t.base_scale == simple - base[nccl.SIMPLE] * t.base_scale
    assert ll < ll128
    # inside one domain LL128 keeps its NVLink step
    one = nccl.tiers(GroupShape(8, 1, 1, 8, 8, 8, 8, 1, False, 1, True), H100, 1.0)
    assert nccl.ring_latency_us(False, one, 7, 0, nccl.LL128) < nccl.ring_latency_us(
        False, one, 7, 0, nccl.SIMPLE
    )
