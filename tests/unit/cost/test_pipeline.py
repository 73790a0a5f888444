"""Pipeline fill and the NCCL tuning rules behind it: tree / NVLS-tree stages between domains,
NVLS-tree channels and chunks (nvls.cc, enqueue.cc), the proxy hand-off of an LL128 step, the
GPUDirect flush of a Simple one where NCCL still flushes, and the ring protocol NCCL's tuner
picks across domains."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.cost import Collective, GroupShape, chunks, estimate_shape, nccl, p2p
from fabricfit.fabric.profiles import FabricProfile, get_profile

H100 = get_profile("dgx-h100")
A100 = get_profile("dgx-a100")
NVL72 = get_profile("gb200-nvl72")
B200 = get_profile("dgx-b200")
KIB, MIB = 1 << 10, 1 << 20


def nodes_of_8(domains: int) -> GroupShape:
    return GroupShape(8 * domains, domains, domains, 8, 8, 8, 8, 1, False, 1, True)


def racks(domains: int) -> GroupShape:
    return GroupShape(72 * domains, 18 * domains, domains, 72, 72, 18, 4, 1, False, 1, True)


def test_nvls_tree_channels_and_chunks_follow_nccl() -> None:
    assert chunks.nvls_tree_tuning(nodes_of_8(2), H100) == (16, 128 * KIB)
    assert chunks.nvls_tree_tuning(nodes_of_8(4), H100) == (16, 64 * KIB)  # >= 4 nodes
    assert chunks.nvls_tree_tuning(racks(2), NVL72) == (32, 64 * KIB)  # 2 nodes, ppn >= 16
    assert chunks.nvls_tree_tuning(racks(20), NVL72) == (24, 128 * KIB)  # Grace tray NICs
    assert chunks.nvls_tree_tuning(nodes_of_8(3), B200) == (24, 64 * KIB)  # NIC behind a switch
    # the chunk shrinks to 64 KiB below 4 x ops x chunk and to 32 KiB below 1 x ops x chunk
    ops = 16 * 8
    assert chunks.nvls_tree_loop_bytes(1 << 30, 16, 8, 128 * KIB) == ops * 128 * KIB
    assert chunks.nvls_tree_loop_bytes(32 * MIB, 16, 8, 128 * KIB) == ops * 64 * KIB
    assert chunks.nvls_tree_loop_bytes(4 * MIB, 16, 8, 128 * KIB) == ops * 32 * KIB
    assert chunks.nvls_tree_loop_bytes(32 * MIB, 16, 8, 64 * KIB) == ops * 64 * KIB


def test_tree_fill_grows_with_the_stages_between_domains() -> None:
    def seconds(domains: int, stage: float, algorithm: str) -> float:
        profile = dataclasses.replace(
            H100, stage_fill_loops=stage, nvls_tree_stage_fill_loops=stage
        )
        return estimate_shape(
            Collective.ALL_REDUCE, 256 * MIB, nodes_of_8(domains), profile, algorithm=algorithm
        ).seconds

    for algorithm in ("nvls", "tree"):
        fill = {d: seconds(d, 1.0, algorithm) - seconds(d, 0.0, algorithm) for d in (2, 16)}
        assert 0 < fill[2] < fill[16], algorithm
    # NVLS-tree at 16 domains: 2 * 4 levels of one loop each on top of the domain's own fill
    assert chunks.tree_stages(nodes_of_8(16)) == 4 + 0.8


def _nvls_tree_s(size: int, domains: int, **changes: float) -> float:
    profile = dataclasses.replace(H100, **changes)
    return estimate_shape(
        Collective.ALL_REDUCE, size, nodes_of_8(domains), profile, algorithm="nvls-tree"
    ).seconds


def test_nvls_tree_stages_fill_at_their_own_tier_rate() -> None:
    """The first loop crosses NVLS in the domain at the NVLink rate and each tree stage at the
    network's: at 2 nodes (NVLink-bound, NICs doubled) a slower NIC lengthens the stages' fill
    though the plateau stays NVLink's; NVLS's own fill does not depend on the NIC at all."""

    def stage_fill(size: int, nic: float) -> float:
        deep = _nvls_tree_s(size, 2, nic_efficiency=nic, nvls_tree_stage_fill_loops=1.0)
        return deep - _nvls_tree_s(size, 2, nic_efficiency=nic, nvls_tree_stage_fill_loops=0.0)

    def domain_fill(nic: float) -> float:
        deep = _nvls_tree_s(1 << 30, 2, nic_efficiency=nic, pipeline_fill_loops=2.0)
        return deep - _nvls_tree_s(1 << 30, 2, nic_efficiency=nic, pipeline_fill_loops=0.0)

    # the NICs are not the 2-node limit: the plateau (16 GiB, fill amortised) barely moves
    fast, slow = (_nvls_tree_s(16 << 30, 2, nic_efficiency=e) for e in (0.96, 0.8))
    assert slow == pytest.approx(fast, rel=0.01)
    # but two tree stages of one 16 MiB loop each take a loop's time at the network's rate
    loop = 16 * 8 * 128 * KIB
    for nic in (0.96, 0.8):
        inter_algbw = 2 * 8 * 50 * nic / (2 * 15 / 16) * 1e9  # NICs doubled at 2 nodes
        assert stage_fill(1 << 30, nic) == pytest.approx(2 * loop / inter_algbw, rel=1e-6)
    assert domain_fill(0.96) == pytest.approx(domain_fill(0.8))


def test_nvls_tree_efficiency_scales_the_nvlink_stage_only() -> None:
    """NVLS-tree's NVLink stage at a fraction of standalone NVLS: it sets the 2-node plateau
    (NVLink-bound) and leaves a 4-node one (NIC-bound) alone."""
    full, part = (_nvls_tree_s(16 << 30, 2, nvls_tree_efficiency=e) for e in (1.0, 0.9))
    assert part / full == pytest.approx(1 / 0.9, rel=0.01)
    full, part = (_nvls_tree_s(16 << 30, 4, nvls_tree_efficiency=e) for e in (1.0, 0.9))
    assert part == pytest.approx(full, rel=0.002)
    # NVLS inside one domain does not run the tree's kernel: unaffected
    one = GroupShape(8, 1, 1, 8, 8, 8, 8, 1, False, 1, True)
    plain, tree_eff = (
        estimate_shape(
            Collective.ALL_REDUCE,
            1 << 30,
            one,
            dataclasses.replace(H100, nvls_tree_efficiency=e),
        ).seconds
        for e in (1.0, 0.5)
    )
    assert plain == tree_eff


def test_a_tree_simple_chunk_is_an_eighth_of_nccl_buffsize() -> None:
    shape = nodes_of_8(2)
    assert chunks.tree_loop_bytes(1 << 30, shape, 16, nccl.SIMPLE, 1 << 22) == 16 * 512 * KIB
    assert chunks.tree_loop_bytes(1 << 30, shape, 16, nccl.SIMPLE, 8 << 20) == 16 * MIB
    # LL and LL128 have buffers of their own (NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE)
    for proto in (nccl.LL, nccl.LL128):
        small, large = (
            chunks.tree_loop_bytes(1 << 30, shape, 16, proto, b) for b in (1 << 22, 8 << 20)
        )
        assert small == large


def test_a_larger_simple_buffer_fills_the_tree_longer_above_one_loop() -> None:
    """Fill is d loops at the call's rate: below one loop it scales with the call whatever the
    loop, above it grows with the loop's bytes (twice the chunk: twice the fill)."""
    base = dataclasses.replace(H100, nccl_protocols=("Simple",))

    def seconds(size: int, buffsize: int, stage: float) -> float:
        profile = dataclasses.replace(base, nccl_buffsize=buffsize, stage_fill_loops=stage)
        return estimate_shape(
            Collective.ALL_REDUCE, size, nodes_of_8(2), profile, algorithm="tree"
        ).seconds

    def fill(size: int, buffsize: int) -> float:
        return seconds(size, buffsize, 1.0) - seconds(size, buffsize, 0.0)

    assert fill(4 * MIB, 8 << 20) == pytest.approx(fill(4 * MIB, 1 << 22))  # < one loop of both
    assert fill(1 << 30, 8 << 20) == pytest.approx(2 * fill(1 << 30, 1 << 22))
    assert seconds(1 << 30, 8 << 20, 1.0) > seconds(1 << 30, 1 << 22, 1.0)


def test_a_step_across_nics_costs_a_simple_hop_plus_a_flush_where_nccl_flushes() -> None:
    def latency(profile: FabricProfile, proto: int) -> float:
        t = nccl.tiers(nodes_of_8(10), profile, 1.0)
        fixed = nccl.BASE_US["ring"][proto] * t.base_scale + t.net_base_us
        return nccl.ring_latency_us(True, t, 79, 9, proto) - fixed

    def hop(profile: FabricProfile) -> float:
        return nccl.NET_US["ring"][nccl.SIMPLE] * nccl.tiers(nodes_of_8(10), profile, 1.0).net_scale

    # Hopper on NCCL >= 2.19: no GPUDirect flush, a Simple step costs an LL128 one
    assert latency(H100, nccl.LL128) == pytest.approx(79 * hop(H100))
    assert latency(H100, nccl.SIMPLE) == pytest.approx(79 * hop(H100))
    assert latency(H100, nccl.LL) < latency(H100, nccl.LL128)
    # the flush, a second round through the NIC: Hopper before 2.19, Ampere on any release
    old = dataclasses.replace(H100, nccl_version="2.18.5")
    assert latency(old, nccl.SIMPLE) == pytest.approx(2 * 79 * hop(old))
    assert latency(old, nccl.LL128) == pytest.approx(79 * hop(old))
    assert latency(A100, nccl.SIMPLE) == pytest.approx(2 * 79 * hop(A100))
    assert not nccl.gpudirect_flush(dataclasses.replace(H100, nccl_version="2.19.1"))
    assert nccl.gpudirect_flush(dataclasses.replace(A100, nccl_version="2.30.7"))
    # inside one domain LL128 keeps its NVLink step
    one = nccl.tiers(GroupShape(8, 1, 1, 8, 8, 8, 8, 1, False, 1, True), H100, 1.0)
    assert nccl.ring_latency_us(False, one, 7, 0, nccl.LL128) < nccl.ring_latency_us(
        False, one, 7, 0, nccl.SIMPLE
    )


@pytest.mark.parametrize(
    ("collective", "size", "protocol"),
    [
        (Collective.ALL_GATHER, 128 * MIB, "LL128"),
        (Collective.ALL_GATHER, 256 * MIB, "Simple"),
        (Collective.REDUCE_SCATTER, 128 * MIB, "LL128"),
        (Collective.REDUCE_SCATTER, 256 * MIB, "Simple"),
    ],
)
def test_a_ring_across_domains_runs_in_the_protocol_nccl_picks(
    collective: Collective, size: int, protocol: str
) -> None:
    # NCCL's constants keep LL128 up to ~240 MB on 10 x 8 H100 and then switch to Simple
    # (xxrjun 10x8 runs: 128 MiB at 158 GB/s busbw, 256 MiB at 150)
    est = estimate_shape(collective, size, nodes_of_8(10), H100)
    assert (est.algorithm, est.protocol) == ("ring", protocol)


def test_with_one_rank_per_node_nccl_charges_a_ring_the_tree_network_hop() -> None:
    one_per_node = GroupShape(10, 10, 10, 1, 1, 1, 1, 1, False, 1, True)
    before = dataclasses.replace(H100, nccl_version="2.22.3")  # the rule arrived in 2.23.4
    # NCCL's tuner: ring LL 2.7 µs and LL128 4.0 µs per network step, tree 5.0 and 8.5; with
    # one rank per node it charges every algorithm the tree's
    assert nccl.tuner_net_hop_us("ring", nccl.LL128, H100, one_rank_per_node=True) == 8.5
    assert nccl.tuner_net_hop_us("ring", nccl.LL128, before, one_rank_per_node=True) == 4.0
    assert nccl.tuner_net_hop_us("ring", nccl.LL128, H100) == 4.0
    # which moves its protocol choice: 10 x 1 H100, 1 MiB all-reduce in LL, not LL128
    now = estimate_shape(Collective.ALL_REDUCE, MIB, one_per_node, H100)
    then = estimate_shape(Collective.ALL_REDUCE, MIB, one_per_node, before)
    assert (now.algorithm, now.protocol) == ("ring", "LL")
    assert (then.algorithm, then.protocol) == ("ring", "LL128")


def test_send_recv_peers_get_fewer_p2p_channels_in_larger_communicators() -> None:
    def one_gpu_per_node(nodes: int) -> GroupShape:
        return GroupShape(nodes, nodes, nodes, 1, 1, 1, 1, 1, False, 1, True)

    # 400 Gb/s NIC: 4 channels per peer; 4 p2p channels at one GPU + NIC per node (1 ring,
    # duplicated, doubled); 16 at 8 GPUs + 8 NICs (8 rings, not duplicated below 50 GB/s)
    assert nccl.collective_channels(1, H100) == 4
    assert nccl.collective_channels(8, H100) == 16
    assert p2p.p2p_channels_per_peer(one_gpu_per_node(2), H100, 1) == 4
    assert p2p.p2p_channels_per_peer(one_gpu_per_node(10), H100, 1) == 2  # 2 batches of 8 peers
    assert p2p.p2p_channels_per_peer(nodes_of_8(10), H100, 8) == 1
    two = estimate_shape(Collective.SEND_RECV, 1 << 30, one_gpu_per_node(2), H100)
    ten = estimate_shape(Collective.SEND_RECV, 1 << 30, one_gpu_per_node(10), H100)
    p2p_efficiency = H100.alltoall_efficiency  # p2p across NICs, as all-to-all's
    assert p2p_efficiency < 1.0
    assert two.busbw_gb_per_s > 0.95 * H100.nic_gb_per_s * p2p_efficiency  # the NIC binds
    assert two.busbw_gb_per_s < H100.nic_gb_per_s * p2p_efficiency * 1.001
    two_channels = 2 * 14.0 * H100.nic_efficiency * p2p_efficiency  # two 14 GB/s channels
    assert two_channels * 0.95 < ten.busbw_gb_per_s < two_channels * 1.001


def test_send_recv_inside_a_node_runs_on_the_channels_nccl_splits_it_over() -> None:
    # 8 ranks: 4 of the 32 p2p channels per op until a part would exceed 16 MiB, then doubling
    # up to 32 (enqueue.cc addP2pToPlan); 2 ranks start at 16
    cases = [(64 * KIB, 8, 1), (MIB, 8, 4), (64 * MIB, 8, 4), (128 * MIB, 8, 8),
             (256 * MIB, 8, 16), (512 * MIB, 8, 32), (8 << 30, 8, 32), (MIB, 2, 16)]  # fmt: skip
    for size, ranks, channels in cases:
        assert p2p.p2p_nvlink_channels(size, ranks) == channels, (size, ranks)
    assert p2p.p2p_protocol(64 * KIB, 4) == nccl.LL
    assert p2p.p2p_protocol(64 * KIB + 1, 4) == nccl.SIMPLE

    node = GroupShape(8, 1, 1, 8, 8, 8, 8, 1, False, 1, True)
    link = p2p.P2P_CHANNEL_NVLINK_GB_PER_S["hopper"]
    at_64 = estimate_shape(Collective.SEND_RECV, 64 * MIB, node, H100)
    at_128 = estimate_shape(Collective.SEND_RECV, 128 * MIB, node, H100)
    huge = estimate_shape(Collective.SEND_RECV, 8 << 30, node, H100)
    assert at_64.protocol == "Simple"
    assert 0.9 * 4 * link < at_64.busbw_gb_per_s <= 4 * link  # four channels
    assert at_128.seconds < 1.1 * at_64.seconds  # twice the bytes on twice the channels
    assert huge.busbw_gb_per_s <= H100.nvlink_ring_gb_per_s  # the NVLink path binds


def test_p2p_fill_slows_small_parts_only() -> None:
    node = GroupShape(8, 1, 1, 8, 8, 8, 8, 1, False, 1, True)
    no_fill = dataclasses.replace(H100, p2p_fill_chunks=0.0)
    for size, slower in ((32 * MIB, 1.5), (8 << 30, 1.02)):  # 2 vs 64 chunks a part
        filled = estimate_shape(Collective.ALL_TO_ALL, size, node, H100).seconds
        plain = estimate_shape(Collective.ALL_TO_ALL, size, node, no_fill).seconds
        assert plain < filled < slower * plain


def test_the_tree_and_nvls_tree_stages_fill_apart() -> None:
    """Two kernels, two pipelines: the classic tree's stage fill does not move NVLS-tree and
    NVLS-tree's does not move the tree."""

    def seconds(algorithm: str, **changes: float) -> float:
        profile = dataclasses.replace(H100, nccl_protocols=("Simple",), **changes)
        return estimate_shape(
            Collective.ALL_REDUCE, 256 * MIB, nodes_of_8(4), profile, algorithm=algorithm
        ).seconds

    for algorithm, own, other in (
        ("tree", "stage_fill_loops", "nvls_tree_stage_fill_loops"),
        ("nvls-tree", "nvls_tree_stage_fill_loops", "stage_fill_loops"),
    ):
        base = seconds(algorithm)
        assert seconds(algorithm, **{own: 3.0}) > base
        assert seconds(algorithm, **{other: 3.0}) == base


@pytest.mark.parametrize(("size", "algorithm", "protocol"), [
    (16 * MIB, "tree", "LL128"),
    (32 * MIB, "nvls-tree", "Simple"),
])  # fmt: skip
def test_nccls_choice_between_tree_and_nvls_tree_at_64_nodes(
    size: int, algorithm: str, protocol: str
) -> None:
    """NCCL's own INFO log on 64 x 8 H200 (NVIDIA/nccl#1752, 2025-06-25): all-reduce of
    16777216 B runs TREE/LL128, 33554432 B NVLS_TREE/SIMPLE; the model's reading of NCCL's
    tuner switches at the same size."""
    est = estimate_shape(Collective.ALL_REDUCE, size, nodes_of_8(64), get_profile("dgx-h200"))
    assert (est.algorithm, est.protocol) == (algorithm, protocol)


@pytest.mark.parametrize(
    ("protocol", "size", "channels"),
    [("LL", 8, 1), ("LL", 64 * KIB - 1, 1), ("LL", 64 * KIB, 2), ("LL", 512 * KIB, 16),
     ("LL", 1 * MIB, 24), ("LL128", 5120 * 3, 3), ("LL128", 120 * KIB, 24),
     ("Simple", 96 * KIB, 3), ("Simple", 8 * MIB, 24)],
)  # fmt: skip
def test_a_small_ring_call_runs_on_fewer_of_the_nodes_24_channels(
    protocol: str, size: int, channels: int
) -> None:
    """enqueue.cc: one channel fewer while bytes < channels x threads x bytes per thread (ring
    LL 512 threads x 8 B x 8 ranks, LL128 640 x 8 B, Simple 512 x 64 B)."""
    assert chunks.call_channels("ring", protocol, size, nodes_of_8(1), H100) == channels


def test_call_channels_of_tree_nvls_p2p_and_the_torus() -> None:
    # tree LL: no x ranks; across nodes the communicator's channels are NCCL's rings per NIC
    assert chunks.call_channels("tree", "LL", 64 * KIB, nodes_of_8(2), H100) == 16
    across = nccl.collective_channels(8, H100)
    assert chunks.call_channels("ring", "Simple", 1 << 30, nodes_of_8(2), H100) == across
    assert chunks.call_channels("nvls", "Simple", 8, nodes_of_8(1), H100) == 16
    assert chunks.call_channels("nvls", "Simple", 8, nodes_of_8(1), B200) == 24
    assert chunks.call_channels("nvls-tree", "Simple", 8, racks(2), NVL72) == 32
    one_node = p2p.p2p_nvlink_channels(64 * MIB, 8)
    assert chunks.call_channels("p2p", "Simple", 64 * MIB, nodes_of_8(1), H100) == one_node
    per_peer = p2p.p2p_nvlink_channels(8 * MIB, 8)  # all-to-all: one eighth to each peer
    assert chunks.call_channels("pairwise", "Simple", 64 * MIB, nodes_of_8(1), H100) == per_peer
    peers = p2p.p2p_channels_per_peer(nodes_of_8(4), H100, 8)
    assert chunks.call_channels("p2p", "Simple", 64 * MIB, nodes_of_8(4), H100) == peers
    assert chunks.call_channels("torus", "-", 1 << 20, nodes_of_8(1), H100) == 0
    one_per_node = GroupShape(8, 8, 8, 1, 1, 1, 1, 1, False, 1, True)
    pat = chunks.call_channels("pat", "Simple", 8, one_per_node, H100)
    assert pat == nccl.collective_channels(1, H100) > 1  # PAT keeps every channel
