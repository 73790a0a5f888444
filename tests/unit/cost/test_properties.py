"""Invariants of the cost model, checked with hypothesis over presets, layouts and sizes."""

from __future__ import annotations

import dataclasses

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fabricfit.cost import (
    Collective,
    GroupShape,
    estimate_collective,
    estimate_concurrent,
    estimate_shape,
    p2p,
    summarize_group,
)
from fabricfit.fabric.profiles import PRESETS, FabricProfile, get_profile
from fabricfit.fabric.topology import GpuSlot

PROFILES = list(PRESETS.values())
GPU_PROFILES = [p for p in PROFILES if not p.is_torus]
OVERSUBSCRIBED = dataclasses.replace(
    get_profile("dgx-h100"), name="h100-2to1", leaf_oversubscription=2.0, spine_oversubscription=4.0
)


def layout(
    profile: FabricProfile,
    nodes: int,
    gpus: int,
    *,
    rail_group_of: int = 1_000_000,
    first_gpu: int = 0,
    skew: bool = False,
) -> list[GpuSlot]:
    """``gpus`` GPUs on each of ``nodes`` nodes; nodes n // rail_group_of share a rail group;
    with ``skew`` odd nodes use the upper GPUs (other rails)."""
    per_domain = max(1, profile.gpus_per_nvlink_domain // profile.gpus_per_node)
    slots = []
    for n in range(nodes):
        start = first_gpu + (profile.gpus_per_node - gpus if skew and n % 2 else 0)
        for j in range(start, start + gpus):
            slots.append(
                GpuSlot(
                    node=f"n{n}",
                    gpu=j,
                    rail=j * profile.nics_per_node // profile.gpus_per_node,
                    nvlink_domain=f"d{n // per_domain}",
                    rail_group=f"rg{n // rail_group_of}",
                    spine="s0",
                )
            )
    return slots


@st.composite
def placements(
    draw: st.DrawFn, profiles: list[FabricProfile] = PROFILES
) -> tuple[FabricProfile, int, int]:
    profile = draw(st.sampled_from(profiles))
    gpus = draw(st.integers(1, profile.gpus_per_node))
    nodes = draw(st.integers(1, 40))
    return profile, nodes, gpus


@settings(max_examples=150, deadline=None)
@given(placements(), st.sampled_from(list(Collective)), st.integers(1, 2**34), st.integers(2, 1024))
def test_time_grows_with_size(
    placement: tuple[FabricProfile, int, int], collective: Collective, size: int, factor: int
) -> None:
    profile, nodes, gpus = placement
    shape = summarize_group(layout(profile, nodes, gpus))
    # inside a node NCCL gives a larger send/recv more channels, and that can make it faster
    # (test_send_recv_in_a_node_speeds_up_where_nccl_adds_channels); compare at equal channels
    if collective is Collective.SEND_RECV and shape.nodes == 1:
        channels = p2p.p2p_nvlink_channels(size, shape.ranks)
        assume(p2p.p2p_nvlink_channels(size * factor, shape.ranks) == channels)
    small = estimate_shape(collective, size, shape, profile)
    large = estimate_shape(collective, size * factor, shape, profile)
    assert large.seconds >= small.seconds


def test_send_recv_in_a_node_speeds_up_where_nccl_adds_channels() -> None:
    """64 MiB runs on 4 channels, 65 MiB on 8 (parts over 16 MiB, enqueue.cc addP2pToPlan):
    measured 8x H100 send-recv takes as long at 128 MiB as at 64 MiB (xxrjun 1x8 log)."""
    profile = get_profile("dgx-h100")
    shape = summarize_group(layout(profile, 1, 8))
    mib = 1 << 20
    at_64 = estimate_shape(Collective.SEND_RECV, 64 * mib, shape, profile).seconds
    at_65 = estimate_shape(Collective.SEND_RECV, 65 * mib, shape, profile).seconds
    at_128 = estimate_shape(Collective.SEND_RECV, 128 * mib, shape, profile).seconds
    assert at_65 < at_64 and abs(at_128 / at_64 - 1) < 0.01


def physical_floor_seconds(
    collective: Collective, size: int, shape: GroupShape, p: FabricProfile
) -> float:
    """Bytes some link must carry / its line rate, whatever the algorithm (in-switch reduction
    included): inside a domain each rank sends or receives (n−1)/n of its buffer; across domains
    a domain must export the bytes other domains need, over its NICs."""
    n, m = shape.ranks, shape.max_per_domain
    if n == 1:
        return 0.0
    if p.torus is not None:
        chip_gb_per_s = 2 * len(p.torus.dims) * p.torus.ici_link_gb_per_s
        return (
            (n - 1) / n * size / (chip_gb_per_s * 1e9)
            if collective is not Collective.SEND_RECV
            else 0.0
        )
    if not shape.multi_domain:
        return (
            (n - 1) / n * size / (p.nvlink_gb_per_s * 1e9)
            if collective is not Collective.BROADCAST
            else 0.0
        )
    nic_line = shape.min_nics_per_domain * p.nic_gbit_per_s / 8 * 1e9
    if collective is Collective.ALL_TO_ALL:
        return shape.min_per_domain * size * (n - shape.min_per_domain) / n / nic_line
    if collective in (Collective.BROADCAST, Collective.REDUCE, Collective.SEND_RECV):
        return size / (p.nic_gbit_per_s / 8 * 1e9 * shape.min_nics_per_domain)
    return size * (n - m) / n / nic_line


@settings(max_examples=200, deadline=None)
@given(placements(), st.sampled_from(list(Collective)), st.integers(1, 2**36))
def test_never_beats_the_physical_bound(
    placement: tuple[FabricProfile, int, int], collective: Collective, size: int
) -> None:
    profile, nodes, gpus = placement
    shape = summarize_group(layout(profile, nodes, gpus))
    estimate = estimate_shape(collective, size, shape, profile)
    assert estimate.seconds >= physical_floor_seconds(collective, size, shape, profile) * 0.999


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(GPU_PROFILES), st.integers(3, 16))
def test_ring_allreduce_busbw_is_flat_in_n(profile: FabricProfile, nodes: int) -> None:
    size = 128 << 30  # bandwidth-bound up to ~1,000 ranks: the alpha term stays < 10 %
    gpus = profile.gpus_per_node

    def busbw(n: int) -> float:
        group = layout(profile, n, gpus)
        return estimate_collective(
            Collective.ALL_REDUCE, size, group, profile, algorithm="ring"
        ).busbw_gb_per_s

    domain_nodes = max(1, profile.gpus_per_nvlink_domain // gpus)
    reference = busbw(3 * domain_nodes)
    assert abs(busbw(nodes * domain_nodes) - reference) / reference < 0.12
    inside = [
        estimate_collective(
            Collective.ALL_REDUCE, size, layout(profile, 1, g), profile, algorithm="ring"
        ).busbw_gb_per_s
        for g in range(2, gpus + 1)
    ]
    assert max(inside) / min(inside) < 1.02


@settings(max_examples=200, deadline=None)
@given(
    placements([*GPU_PROFILES, OVERSUBSCRIBED]),
    st.sampled_from(list(Collective)),
    st.integers(1, 2**34),
    st.sampled_from(["split", "skew", "unlabelled"]),
)
def test_crossing_the_spine_is_never_faster(
    placement: tuple[FabricProfile, int, int], collective: Collective, size: int, how: str
) -> None:
    profile, nodes, gpus = placement
    leaf = layout(profile, nodes, gpus)
    if how == "split":
        spine = layout(profile, nodes, gpus, rail_group_of=1)
    elif how == "skew":
        spine = layout(profile, nodes, gpus, skew=True)
    else:
        spine = [dataclasses.replace(s, rail_group=None) for s in leaf]
    fast = estimate_collective(collective, size, leaf, profile)
    slow = estimate_collective(collective, size, spine, profile)
    assert slow.seconds >= fast.seconds


def test_oversubscribed_spine_is_slower_and_named() -> None:
    leaf = layout(OVERSUBSCRIBED, 16, 8)
    spine = layout(OVERSUBSCRIBED, 16, 8, rail_group_of=4)
    fast = estimate_collective(
        Collective.ALL_REDUCE, 4 << 30, leaf, OVERSUBSCRIBED, algorithm="ring"
    )
    slow = estimate_collective(
        Collective.ALL_REDUCE, 4 << 30, spine, OVERSUBSCRIBED, algorithm="ring"
    )
    assert slow.seconds > 1.8 * fast.seconds
    assert (fast.bottleneck, slow.bottleneck) == ("nic", "spine")


def test_dp_rings_on_their_own_rails_beat_rings_sharing_one_rail() -> None:
    profile = get_profile("dgx-h100")
    own = layout(profile, 16, 8)
    shared = [dataclasses.replace(s, rail=0) for s in own]
    rings_own = [[s for s in own if s.gpu == j] for j in range(8)]
    rings_shared = [[s for s in shared if s.gpu == j] for j in range(8)]
    size = 1 << 30
    alone = estimate_collective(Collective.ALL_REDUCE, size, rings_own[0], profile)
    on_rails = estimate_concurrent(Collective.ALL_REDUCE, size, rings_own, profile)
    on_one = estimate_concurrent(Collective.ALL_REDUCE, size, rings_shared, profile)
    assert on_rails.seconds == alone.seconds
    assert on_one.seconds > 6 * on_rails.seconds


@st.composite
def shapes(draw: st.DrawFn) -> GroupShape:
    domains = draw(st.integers(1, 512))
    low = draw(st.integers(1, 72))
    high = draw(st.integers(low, 72))
    ranks = low if domains == 1 else low + high + (domains - 2) * low
    return GroupShape(
        ranks=ranks if domains > 1 else high,
        nodes=draw(st.integers(domains, domains * 18)),
        domains=domains,
        max_per_domain=high,
        min_per_domain=low if domains > 1 else high,
        min_nics_per_domain=draw(st.integers(1, 72)),
        max_per_node=draw(st.integers(1, high)),
        rail_groups=draw(st.integers(0, 8)),
        ungrouped=draw(st.booleans()),
        spines=draw(st.integers(1, 4)),
        rail_aligned=draw(st.booleans()),
    )


@settings(max_examples=300, deadline=None)
@given(
    shapes(),
    st.sampled_from(PROFILES),
    st.sampled_from(list(Collective)),
    st.integers(0, 2**40),
    st.integers(1, 64),
)
def test_any_consistent_shape_gets_a_finite_estimate(
    shape: GroupShape, profile: FabricProfile, collective: Collective, size: int, load: int
) -> None:
    est = estimate_shape(collective, size, shape, profile, load=load)
    assert 0 <= est.seconds < 1e6 and est.algbw_gb_per_s >= 0 and est.busbw_gb_per_s >= 0
    assert est.bottleneck in ("nvlink", "nic", "leaf", "spine", "ici", "dcn", "latency")
