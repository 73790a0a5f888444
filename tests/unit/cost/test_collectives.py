"""Table-driven checks of the collective cost model: definitions, algorithm choice, errors."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.cost import (
    Collective,
    CostError,
    GroupShape,
    estimate_collective,
    estimate_concurrent,
    estimate_shape,
    summarize_group,
)
from fabricfit.cost.torus import slice_shape, wraps
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import GpuSlot

H100 = get_profile("dgx-h100")
A100 = get_profile("dgx-a100")
V5E = get_profile("tpu-v5e")
V4 = get_profile("tpu-v4")
GIB = 1 << 30


def node_gpus(
    nodes: int, gpus: int, *, rails: int = 8, rail_group: str | None = "su0", domain: str = ""
) -> list[GpuSlot]:
    """GPUs 0..gpus-1 of each node; each node its own NVLink domain unless ``domain`` is given."""
    return [
        GpuSlot(f"n{n}", j, j * rails // 8, domain or f"n{n}", rail_group, "s0")
        for n in range(nodes)
        for j in range(gpus)
    ]


FACTORS = {
    Collective.ALL_REDUCE: lambda n: 2 * (n - 1) / n,
    Collective.REDUCE_SCATTER: lambda n: (n - 1) / n,
    Collective.ALL_GATHER: lambda n: (n - 1) / n,
    Collective.ALL_TO_ALL: lambda n: (n - 1) / n,
    Collective.BROADCAST: lambda n: 1.0,
    Collective.REDUCE: lambda n: 1.0,
    Collective.SEND_RECV: lambda n: 1.0,
}


@pytest.mark.parametrize("collective", list(Collective))
@pytest.mark.parametrize(("nodes", "gpus"), [(1, 8), (4, 8), (16, 1)])
def test_algbw_and_busbw_follow_nccl_tests_definitions(
    collective: Collective, nodes: int, gpus: int
) -> None:
    est = estimate_collective(collective, GIB, node_gpus(nodes, gpus), H100)
    n = nodes * gpus
    assert est.ranks == n and est.size_bytes == GIB and est.collective is collective
    assert est.algbw_gb_per_s == pytest.approx(GIB / est.seconds / 1e9)
    assert est.busbw_gb_per_s == pytest.approx(est.algbw_gb_per_s * FACTORS[collective](n))


@pytest.mark.parametrize(
    ("size", "algorithm", "protocol"),
    [
        (8, "ring", "LL"),
        (256 << 10, "ring", "LL"),
        (256 << 20, "nvls", "Simple"),
        (16 * GIB, "nvls", "Simple"),
    ],
)
def test_single_h100_node_picks_what_nccl_picks(size: int, algorithm: str, protocol: str) -> None:
    # "8B~1MB Ring LL; 2MB~16GB NVLS Simple" on 8x H100 (nccl-tests#309); between 2 and
    # ~64 MiB NVLS runs below its plateau (pipeline fill), so the model may price ring there
    est = estimate_collective(Collective.ALL_REDUCE, size, node_gpus(1, 8), H100)
    assert (est.algorithm, est.protocol) == (algorithm, protocol)


def test_single_rank_and_empty_buffer_cost_nothing() -> None:
    assert estimate_collective(Collective.ALL_REDUCE, GIB, node_gpus(1, 1), H100).seconds == 0.0
    assert estimate_collective(Collective.ALL_GATHER, 0, node_gpus(2, 8), H100).seconds == 0.0


@pytest.mark.parametrize(
    ("collective", "profile", "group", "algorithm"),
    [
        (Collective.ALL_REDUCE, A100, node_gpus(1, 8), "nvls"),  # no NVLink SHARP on Ampere
        (Collective.ALL_GATHER, H100, node_gpus(1, 8), "tree"),  # NCCL's tree is all-reduce only
        (Collective.ALL_GATHER, H100, node_gpus(2, 8), "pat"),  # PAT needs one rank per node
        (Collective.ALL_REDUCE, H100, node_gpus(1, 8), "hierarchical"),  # needs several domains
        (Collective.ALL_REDUCE, V5E, node_gpus(4, 4), "tree"),
    ],
)
def test_forcing_an_inapplicable_algorithm_is_an_error(
    collective, profile, group, algorithm
) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CostError):
        estimate_collective(collective, GIB, group, profile, algorithm=algorithm)


def test_forced_algorithms_that_apply() -> None:
    pat = estimate_collective(
        Collective.ALL_GATHER, 1 << 20, node_gpus(16, 1), H100, algorithm="pat"
    )
    assert pat.algorithm == "pat"
    two = estimate_collective(Collective.ALL_REDUCE, GIB, node_gpus(2, 8), H100, algorithm="nvls")
    assert two.algorithm == "nvls-tree"
    hier = estimate_collective(
        Collective.ALL_REDUCE, GIB, node_gpus(4, 8), H100, algorithm="hierarchical"
    )
    ring = estimate_collective(Collective.ALL_REDUCE, GIB, node_gpus(4, 8), H100, algorithm="ring")
    assert hier.seconds > ring.seconds  # sequential phases never beat NCCL's pipelined ring


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"size_bytes": -1}, "size"), ({"load": 0.5}, "load"), ({"algorithm": "magic"}, "algorithm")],
)
def test_bad_arguments_raise_cost_error(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"size_bytes": GIB, "load": 1.0, "algorithm": "auto", **kwargs}
    shape = summarize_group(node_gpus(1, 8))
    with pytest.raises(CostError, match=message):
        estimate_shape(
            Collective.ALL_REDUCE,
            args["size_bytes"],  # type: ignore[arg-type]
            shape,
            H100,
            algorithm=args["algorithm"],  # type: ignore[arg-type]
            load=args["load"],  # type: ignore[arg-type]
        )
    with pytest.raises(CostError):
        summarize_group([])
    with pytest.raises(CostError):
        estimate_concurrent(Collective.ALL_REDUCE, GIB, [], H100)


def test_summary_of_known_layouts() -> None:
    shape = summarize_group(node_gpus(4, 8))
    assert shape == GroupShape(32, 4, 4, 8, 8, 8, 8, 1, False, 1, True, True, False)
    assert not shape.crosses_spine
    one_per_node = summarize_group([s for s in node_gpus(4, 8) if s.gpu == 3])
    assert (one_per_node.min_nics_per_domain, one_per_node.rail_aligned) == (1, True)
    skew = summarize_group([s for s in node_gpus(2, 8) if s.gpu == (0 if s.node == "n0" else 5)])
    assert not skew.rail_aligned and skew.crosses_spine
    unlabelled = summarize_group(node_gpus(2, 8, rail_group=None))
    assert unlabelled.ungrouped and unlabelled.crosses_spine
    no_domain = summarize_group([dataclasses.replace(s, nvlink_domain="") for s in node_gpus(2, 4)])
    assert no_domain.domains == 2


def test_estimates_are_cached_and_shapes_hashable() -> None:
    shape = summarize_group(node_gpus(8, 8))
    first = estimate_shape(Collective.ALL_REDUCE, GIB, shape, H100)
    assert estimate_shape(Collective.ALL_REDUCE, GIB, shape, H100) is first
    assert hash(shape) == hash(summarize_group(node_gpus(8, 8)))


def test_bottleneck_names_the_limiting_tier() -> None:
    assert (
        estimate_collective(Collective.ALL_REDUCE, 8, node_gpus(1, 8), H100).bottleneck == "latency"
    )
    assert (
        estimate_collective(Collective.ALL_GATHER, GIB, node_gpus(1, 8), H100).bottleneck
        == "nvlink"
    )
    assert (
        estimate_collective(Collective.ALL_GATHER, GIB, node_gpus(4, 8), H100).bottleneck == "nic"
    )
    tpu_slice = node_gpus(16, 4, domain="slice")
    assert estimate_collective(Collective.ALL_GATHER, GIB, tpu_slice, V5E).bottleneck == "ici"


def test_contention_halves_a_shared_nic() -> None:
    a = [s for s in node_gpus(4, 8, rails=4) if s.gpu == 0]
    b = [s for s in node_gpus(4, 8, rails=4) if s.gpu == 1]  # GPUs 0 and 1 share NIC 0
    alone = estimate_collective(Collective.ALL_GATHER, GIB, a, H100)
    together = estimate_concurrent(Collective.ALL_GATHER, GIB, [a, b], H100)
    assert together.busbw_gb_per_s == pytest.approx(alone.busbw_gb_per_s / 2, rel=0.02)


@pytest.mark.parametrize(
    ("chips", "dims", "axes"),
    [
        (4, (16, 16, 16), (2, 2, 1)),
        (8, (16, 16, 16), (2, 2, 2)),
        (64, (16, 16, 16), (4, 4, 4)),
        (256, (16, 16), (16, 16)),
        (32, (16, 16), (8, 4)),
        (12, (16, 16, 16), (3, 2, 2)),
    ],
)
def test_tpu_slices_are_most_cubic(
    chips: int, dims: tuple[int, ...], axes: tuple[int, ...]
) -> None:
    assert slice_shape(chips, dims) == axes


def test_tpu_wraparound_rules_and_their_cost() -> None:
    assert wraps((4, 4, 4), V4.torus) == (True, True, True)  # type: ignore[arg-type]
    assert wraps((4, 2, 2), V4.torus) == (False, False, False)  # type: ignore[arg-type]
    assert wraps((16, 8), V5E.torus) == (True, False)  # type: ignore[arg-type]
    cube = estimate_collective(
        Collective.ALL_GATHER, GIB, node_gpus(16, 4, domain="s"), V4
    )  # 4x4x4
    brick = estimate_collective(
        Collective.ALL_GATHER, GIB, node_gpus(8, 4, domain="s"), V4
    )  # 4x4x2
    assert cube.busbw_gb_per_s > 1.5 * brick.busbw_gb_per_s


def test_tpu_slices_talk_over_dcn() -> None:
    # 16 single-host slices: a 2x2 ICI reduce inside each, a 16-way DCN all-reduce between
    est = estimate_collective(Collective.ALL_REDUCE, GIB, node_gpus(16, 4), V5E)
    assert est.bottleneck == "dcn" and est.algorithm == "torus"
    one_slice = estimate_collective(Collective.ALL_REDUCE, GIB, node_gpus(16, 4, domain="s"), V5E)
    assert est.seconds > one_slice.seconds


@pytest.mark.parametrize(
    ("fabric", "nodes", "gpus", "domains"), [("dgx-h100", 2, 8, 2), ("gb200-nvl72", 72, 4, 4)]
)
def test_alltoall_across_domains_is_per_gpu_nic_times_n_over_n_minus_1(
    fabric: str, nodes: int, gpus: int, domains: int
) -> None:
    # busbw ≈ N/(N−1) × per-GPU network bandwidth (sjeaugey, nccl-tests#130); every rank's own
    # NIC carries its share (no channel bound for p2p-based all-to-all)
    profile = get_profile(fabric)
    per_domain = profile.gpus_per_nvlink_domain // profile.gpus_per_node
    group = [
        GpuSlot(f"n{n}", j, j, f"d{n // per_domain}", "su0", "s0")
        for n in range(nodes)
        for j in range(gpus)
    ]
    est = estimate_collective(Collective.ALL_TO_ALL, 4 * GIB, group, profile)
    n = nodes * gpus
    from fabricfit.cost.algorithms import alltoall_efficiency

    shape = summarize_group(group)
    eff = alltoall_efficiency(shape, profile)
    expected = eff * profile.nic_gb_per_s * domains / (domains - 1) * (n - 1) / n
    assert est.busbw_gb_per_s == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize(
    "shape",
    [
        GroupShape(8, 1, 1, 8, 8, 0, 8, 1, False, 1, True),  # no NIC
        GroupShape(8, 1, 9, 8, 8, 1, 8, 1, False, 1, True),  # more domains than ranks
        GroupShape(8, 1, 1, 4, 8, 1, 8, 1, False, 1, True),  # min > max per domain
    ],
)
def test_inconsistent_hand_built_shapes_are_rejected(shape: GroupShape) -> None:
    with pytest.raises(CostError, match="inconsistent"):
        estimate_shape(Collective.ALL_REDUCE, GIB, shape, H100)


def test_enable_rules_follow_nccl() -> None:
    # tree only across domains; NVLS for RS/AG inside one domain only (tuning.cc)
    with pytest.raises(CostError):
        estimate_collective(Collective.ALL_REDUCE, GIB, node_gpus(1, 8), H100, algorithm="tree")
    inside = estimate_collective(
        Collective.ALL_GATHER, GIB, node_gpus(1, 8), H100, algorithm="nvls"
    )
    assert inside.algorithm == "nvls"
    with pytest.raises(CostError):
        estimate_collective(Collective.ALL_GATHER, GIB, node_gpus(2, 8), H100, algorithm="nvls")
    # hierarchical is not an NCCL algorithm: never chosen unless forced
    for size in (1 << 10, 1 << 20, GIB):
        assert (
            estimate_collective(Collective.ALL_REDUCE, size, node_gpus(3, 8), A100).algorithm
            != "hierarchical"
        )


def test_two_node_tree_runs_only_where_nccl_would_pick_it() -> None:
    # DGX A100, 2 nodes: per channel the doubled HDR rate (2 x ~24 GB/s) exceeds the Ampere
    # tree cap (23.6), so NCCL runs ring for large buffers; a forced tree is still priced
    auto = estimate_collective(Collective.ALL_REDUCE, 4 * GIB, node_gpus(2, 8), A100)
    tree = estimate_collective(
        Collective.ALL_REDUCE, 4 * GIB, node_gpus(2, 8), A100, algorithm="tree"
    )
    assert auto.algorithm == "ring"
    assert auto.busbw_gb_per_s == pytest.approx(A100.nic_gb_per_s * 8, rel=0.05)
    assert tree.algorithm == "tree"
    # small messages: the tree's logarithmic latency wins, as in NCCL
    assert estimate_collective(Collective.ALL_REDUCE, 8, node_gpus(8, 8), A100).algorithm == "tree"


def test_nvls_runs_below_its_plateau_until_many_loops_are_in_flight() -> None:
    def busbw(size: int, profile=H100, nodes=1, gpus=8, domain=""):  # type: ignore[no-untyped-def]
        group = node_gpus(nodes, gpus, domain=domain)
        return estimate_collective(
            Collective.ALL_REDUCE, size, group, profile, algorithm="nvls"
        ).busbw_gb_per_s

    plateau = busbw(16 * GIB)
    assert busbw(16 << 20) < 0.6 * plateau  # 16 MiB is a few NVLS loops on 8 GPUs
    assert busbw(1 * GIB) > 0.9 * plateau
    rack = get_profile("gb200-nvl72")
    # 72 GPUs: the loop is 32 heads x 24 channels x chunk, so the same 512 MiB fills less of it
    rack_ratio = busbw(512 << 20, rack, 18, 4, "nvl") / busbw(16 * GIB, rack, 18, 4, "nvl")
    assert rack_ratio < busbw(512 << 20) / plateau


def test_cross_domain_ring_steps_wait_for_the_network_hop() -> None:
    def ring_latency(nodes: int) -> float:
        return estimate_collective(
            Collective.ALL_GATHER, 8, node_gpus(nodes, 8), H100, algorithm="ring"
        ).seconds

    # n - 1 steps, every one at the network hop: latency linear in ranks, not in nodes
    assert ring_latency(16) > 1.8 * ring_latency(8)
    slower_net = dataclasses.replace(H100, net_hop_latency_us=2 * H100.net_hop_latency_us)
    assert estimate_collective(
        Collective.ALL_GATHER, 8, node_gpus(8, 8), slower_net, algorithm="ring"
    ).seconds > 1.5 * ring_latency(8)


def test_alltoall_efficiency_falls_with_domain_count() -> None:
    decaying = dataclasses.replace(H100, alltoall_efficiency=0.8, alltoall_decay=0.3)

    def busbw(nodes: int) -> float:
        return estimate_collective(
            Collective.ALL_TO_ALL, 4 * GIB, node_gpus(nodes, 8), decaying
        ).busbw_gb_per_s

    # N/(N-1) x per-GPU NIC rate x efficiency (sjeaugey, nccl-tests#130), at 2 domains
    assert busbw(2) == pytest.approx(0.8 * H100.nic_gb_per_s * 2 * 15 / 16, rel=0.02)
    assert busbw(16) < busbw(4) < busbw(2) * 4 / 3
