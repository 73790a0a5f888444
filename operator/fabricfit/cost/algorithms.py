"""Candidate algorithms for one collective on an NVLink + rail-optimised scale-out fabric.

Theory of operation
-------------------
Each function returns the (algorithm, protocol, seconds, bottleneck) candidates NCCL would
consider for the collective on this group shape, priced at wall time; which of them NCCL's
tuner would run is :mod:`fabricfit.cost.tuner`, and :mod:`fabricfit.cost.collectives` takes
the fastest of those. Times are
``latency + bytes / bandwidth`` with NCCL's latency tables (:mod:`fabricfit.cost.nccl`) and the
bandwidth of the tiers the group crosses:

* ring (AR: 2(n−1) steps, RS/AG: n−1, broadcast/reduce: a pipelined chain): bandwidth-optimal,
  latency linear in n, every step of a cross-domain ring charged at the network hop (a Simple
  step twice where its receive waits for the GPUDirect flush: Ampere, or NCCL before 2.19).
  Across domains the ring runs in the protocol NCCL's tuner picks from its own constants
  (``nccl_ring_protocol``), not the one fastest in wall time: on 10 H100 nodes Simple from
  ~240 MB;
* tree (AR, only across domains): NCCL's double binary tree plus a chain inside each domain,
  latency logarithmic in the number of domains. Auto selection uses NCCL's tuner bandwidth:
  channels × per-channel bandwidth (doubled at 2 domains, search.cc), ×0.92, capped per channel
  (``perChMaxTreeBws``), ×0.5 bus→alg, × ``treeCorrectionFactor`` for the size — so a 2–3-domain
  tree is chosen only when the NICs per channel are slower than the cap (D1). Once chosen (or
  forced) it is priced at what it really moves: the tier's rate / the edges of the busiest
  domain (``tree_edges``; nccl#1801 measured tree 1.2× ring on 3 domains), at NCCL's size
  correction read as a smooth efficiency (``tuner.tree_efficiency``: NCCL's value at every
  power of two, linear in log2 size between, never a faster larger message), plus a pipeline
  fill of ``stage_fill_loops`` loops per stage (``chunks.tree_stages``, up and down) at the
  fill's own efficiency (``tuner.fill_efficiency``);
* nvls (AR, RS, AG inside one domain with NVLink SHARP) and nvls-tree (AR across domains):
  in-switch reduction, with a pipeline-fill efficiency from NCCL's channel × head × chunk split
  (``chunks.nvls_loop_bytes``): a call of L loops runs at L/(L + d) of the plateau; NVLS-tree
  loops follow NCCL's NVLS-tree channels and chunks (``chunks.nvls_tree_tuning``); its NVLink
  stage runs at ``nvls_tree_efficiency`` of NVLS's rate, and the first loop fills NVLS at the
  NVLink rate, then ``nvls_tree_stage_fill_loops`` loops per tree level it climbs and descends
  between domains (2·⌈log2 domains⌉) at the network's rate, each stage at its own tier's pace;
* pat (RS/AG, one rank per node): logarithmic latency at ×0.75 bandwidth (tuning.cc);
* pairwise (all-to-all): every rank sends 1/n of its buffer to every peer; intra-domain bytes
  over NVLink (inside one node with each peer op's chunk-pipeline fill, as send-recv), the rest
  over every rank's NIC at the profile's all-to-all efficiency, which decays with the number of
  domains (incast, PXN forwarding, messages of S/n);
* p2p (send-recv): inside one node, the channels NCCL splits the op over for its size (4 of 32
  at 8 ranks up to 64 MiB, doubling per 16 MiB part up to 32: enqueue.cc addP2pToPlan), each
  carrying one NVLink's worth (topo.h), at most the NVLink path, through a chunk pipeline
  that takes d chunk times to fill; across domains one NIC (PXN keeps it on-rail; nccl 2.12
  blog) at most the peer's p2p channels × 14 GB/s × NIC efficiency
  (``p2p.p2p_channels_per_peer``: NCCL gives a peer fewer channels as the communicator grows),
  at the profile's all-to-all efficiency: both are p2p ops across NICs, moved in NCCL's
  128 KiB p2p network chunks (NCCL_P2P_NET_CHUNKSIZE), and send-recv has no incast to decay it;
* hierarchical (AR, only when forced): intra RS, inter AR, intra AG as sequential phases. NCCL
  does not implement it, so ``auto`` never picks it; it stays as a what-if for ``--algorithm``.
"""

from __future__ import annotations

from typing import NamedTuple

from fabricfit.cost import chunks, nccl, p2p
from fabricfit.cost.nccl import LL, SIMPLE, Tiers
from fabricfit.cost.shape import GroupShape
from fabricfit.cost.tuner import (
    GB,
    NVLS_TREE_BUCKETS,
    US,
    RingSteps,
    fill_efficiency,
    nccl_prefers_tree,
    nccl_ring_protocol,
    nvls_runs,
    ring_bw,
    tree_efficiency,
    tree_tuner_alg_gb_per_s,
    x86_blackwell,
)
from fabricfit.fabric.profiles import FabricProfile

__all__ = [
    "GB",
    "US",
    "Candidate",
    "RingSteps",
    "alltoall_efficiency",
    "hierarchical_allreduce",
    "nvls",
    "nvls_tree_allreduce",
    "pairwise_alltoall",
    "pat",
    "ring",
    "send_recv",
    "tree_allreduce",
    "tree_edges",
]


class Candidate(NamedTuple):
    algorithm: str
    protocol: str
    latency_s: float  # the α term
    transfer_s: float  # the bytes / bandwidth term
    bottleneck: str  # tier limiting the transfer term

    @property
    def seconds(self) -> float:
        return self.latency_s + self.transfer_s


def ring(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers, schedule: RingSteps
) -> list[Candidate]:
    """Ring candidates for the ``schedule`` given: one per protocol inside a domain; across
    domains only the protocol NCCL's tuner picks (``nccl_ring_protocol``), priced at wall time."""
    multi = shape.multi_domain
    steps, inter, factor = schedule.steps, schedule.inter, schedule.factor
    chosen = (nccl_ring_protocol(size, shape, profile, t, schedule),) if multi else t.protocols
    out = []
    for proto in chosen:
        lat = nccl.ring_latency_us(multi, t, steps, inter, proto)
        bw = ring_bw(t.ring_gb_per_s, t, proto, profile.arch)
        out.append(
            Candidate(
                "ring", nccl.PROTOCOLS[proto], lat * US, factor * size / (bw * GB), t.ring_tier
            )
        )
    return out


def tree_edges(domains: int) -> int:
    """Tree edges the busiest domain carries, summed over NCCL's two binary trees (trees.cc
    ncclGetDtree: the second tree mirrors or shifts the first, so a leaf of one is inner in the
    other). Each edge moves half the buffer each way: 2 domains → 2 edges, 3 → 3, more → 4."""
    return min(domains, 4) if domains > 1 else 0


def _tree_physical_alg_gb_per_s(t: Tiers, proto: int, domains: int) -> float:
    """What the tree really moves: the tier's rate × 2 / edges of the busiest domain, with the
    protocol's efficiency (3 NVL4/NVL8 domains: tree 1.2× ring measured, nccl#1801)."""
    factor = (1 / nccl.TREE_LL_DIVISOR, nccl.TREE_LL128_FACTOR, nccl.TREE_SIMPLE_FACTOR)[proto]
    alg = factor * t.out_gb_per_s * 2 / tree_edges(domains)
    return min(alg, t.ll_cap_gb_per_s / 2) if proto == LL else alg


def tree_allreduce(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers, *, auto: bool = True
) -> list[Candidate]:
    """In auto mode only where NCCL would pick tree over ring and NVLS-tree
    (``tuner.nccl_prefers_tree``); priced
    at the physical rate (at most twice the tuner's) with the profile's wall-time latencies."""
    if "tree" not in t.algorithms or not shape.multi_domain:
        return []
    if auto and not nccl_prefers_tree(size, shape, profile, t):
        return []
    log_domains = nccl.log2_domains(shape)
    chain = nccl.TREE_SIMPLE_FACTOR * profile.nvlink_ring_gb_per_s / 2
    out = []
    for proto in t.protocols:
        intra = nccl.NVLINK_US["tree"][proto] * t.nvlink_scale
        inter = nccl.net_hop_us(t, "tree", proto)
        hops = (shape.max_per_domain - 1) * intra + log_domains * inter
        lat = (nccl.BASE_US["tree"][proto] * t.base_scale + t.net_base_us + 2 * hops) * US
        tuner = tree_tuner_alg_gb_per_s(shape, profile, t, proto)
        alg = min(_tree_physical_alg_gb_per_s(t, proto, shape.domains), 2 * tuner)
        tier = t.out_tier
        if shape.max_per_domain > 1 and chain < alg:
            alg, tier = chain, "nvlink"
        streaming = size / (alg * GB)
        loop = chunks.tree_loop_bytes(size, shape, t.channels, proto, profile.nccl_buffsize)
        stages = 2 * chunks.tree_stages(shape)
        # the fill at its own efficiency (tuner.fill_efficiency): a larger message never fills
        # sooner where the size correction rises with size
        filling = streaming / fill_efficiency(size, int(loop), proto)
        fill = _fill_s(size, filling, profile.stage_fill_loops * stages, loop)
        transfer = streaming / tree_efficiency(size, proto) + fill
        out.append(Candidate("tree", nccl.PROTOCOLS[proto], lat, transfer, tier))
    return out


def _fill_s(size: int, transfer_s: float, loops: float, loop_bytes: float) -> float:
    """Pipeline fill: L = size/loop loops run at L/(L + d) of the plateau, i.e. d loops' worth
    of extra time at the call's own rate; a call smaller than one loop fills only itself."""
    return loops * min(loop_bytes, size) / size * transfer_s


def nvls(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers, collective_factor: float
) -> list[Candidate]:
    """NVLS inside one domain (AR, and RS/AG up to 32 local ranks); Simple only."""
    m = shape.max_per_domain
    if not nvls_runs(profile, t, "nvls") or shape.multi_domain or m < 2:
        return []
    if collective_factor < 1.0 and m > chunks.NVLS_MAX_HEADS:
        return []
    transfer = size / (nccl.nvls_algbw_gb_per_s(m, profile) * GB)
    loop = chunks.nvls_loop_bytes(size, chunks.nvls_channels(profile), min(m, 32))
    fill = _fill_s(size, transfer, profile.pipeline_fill_loops, loop)
    return [Candidate("nvls", "Simple", profile.nvls_latency_us * US, transfer + fill, "nvlink")]


def nvls_tree_allreduce(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers
) -> list[Candidate]:
    """NVLS inside each domain, a tree across (tuning.cc 311-322): inter busbw = NIC egress
    (×2 at ≤ 2 domains), capped per channel, no 0.92 and bus→alg nRanks/nsteps (D2)."""
    m = shape.max_per_domain
    if not nvls_runs(profile, t, "nvls-tree") or not shape.multi_domain or m < 2:
        return []
    n = shape.ranks
    channels, chunk = chunks.nvls_tree_tuning(shape, profile)
    doubled = 2.0 if shape.domains <= 2 else 1.0
    cap = nccl.PER_CHANNEL_NVLS_TREE.get(profile.arch, (1e9,) * 3)[nccl.node_index(shape)]
    inter_bus = min(doubled * t.out_gb_per_s, channels * cap)
    inter_s = 2 * (n - 1) / n * size / (inter_bus * GB)
    intra_bw = nccl.nvls_algbw_gb_per_s(m, profile) * profile.nvls_tree_efficiency
    intra_s = size / (intra_bw * GB)
    loop = chunks.nvls_tree_loop_bytes(size, channels, min(m, chunks.NVLS_MAX_HEADS), chunk)
    # x86 Blackwell: the tree's size correction, smooth in size and, for the fill, the loop's
    # (as the tree's: a larger message never finishes sooner)
    slow, piece_slow = _x86_slowdown(size, loop, profile)
    transfer = slow * max(intra_s, inter_s)
    # fill: the first loop crosses NVLS inside the domain, then one stage per tree level up and
    # down between domains, each stage at its own tier's rate (the slower tier sets the plateau)
    levels = nccl.log2_domains(shape)
    stages = profile.nvls_tree_stage_fill_loops * 2 * levels
    fill = _fill_s(size, piece_slow * intra_s, profile.pipeline_fill_loops, loop)
    fill += _fill_s(size, piece_slow * inter_s, stages, loop)
    inter_hop = nccl.net_hop_us(t, "nvls-tree", SIMPLE)
    lat = profile.nvls_latency_us + t.net_base_us + 2 * levels * inter_hop
    bottleneck = t.out_tier if inter_s >= intra_s else "nvlink"
    seconds = transfer + fill
    return [Candidate("nvls-tree", "Simple", lat * US, seconds, bottleneck)]


def _x86_slowdown(size: int, loop: int, profile: FabricProfile) -> tuple[float, float]:
    """NVLS-tree's slowdown on x86 Blackwell (tuning.cc:643-646 @5067397c) for the stream and
    for its loop-sized fill pieces; 1 elsewhere."""
    if not x86_blackwell(profile):
        return 1.0, 1.0
    buckets = NVLS_TREE_BUCKETS
    stream = tree_efficiency(size, SIMPLE, buckets)
    return 1 / stream, 1 / fill_efficiency(size, loop, SIMPLE, buckets)


def hierarchical_allreduce(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers
) -> list[Candidate]:
    if not shape.multi_domain or shape.min_per_domain < 2:
        return []
    m, d = shape.max_per_domain, shape.domains
    intra_s = 2 * (m - 1) / m * size / (profile.nvlink_ring_gb_per_s * GB)
    inter_s = 2 * (d - 1) / d * size / (t.out_gb_per_s * GB)
    lat = nccl.ring_latency_us(True, t, 2 * (m - 1) + 2 * (d - 1), 2 * (d - 1), SIMPLE)
    bottleneck = t.out_tier if inter_s >= intra_s else "nvlink"
    return [Candidate("hierarchical", "Simple", lat * US, intra_s + inter_s, bottleneck)]


def pat(size: int, shape: GroupShape, t: Tiers) -> list[Candidate]:
    """PAT reduce-scatter / all-gather: only with one rank per node across nodes."""
    n = shape.ranks
    allowed = "pat" in t.algorithms and SIMPLE in t.protocols
    if shape.nodes != n or not shape.multi_domain or not allowed:
        return []
    net = nccl.net_hop_us(t, "pat", SIMPLE)
    base = nccl.BASE_US["pat"][SIMPLE] * t.base_scale + t.net_base_us
    lat = base + nccl.log2_domains(shape) * net / 3.5 + 2.8 * n * t.nvlink_scale
    transfer = (n - 1) / n * size / (t.ring_gb_per_s * nccl.PAT_FACTOR * GB)
    return [Candidate("pat", "Simple", lat * US, transfer, t.ring_tier)]


def alltoall_efficiency(shape: GroupShape, profile: FabricProfile) -> float:
    """Fraction of every rank's NIC a cross-domain all-to-all reaches: the profile's figure at
    two domains, decaying as (2/domains)^decay with more (incast, PXN forwarding)."""
    if shape.domains <= 2:
        return profile.alltoall_efficiency
    return float(profile.alltoall_efficiency * (2 / shape.domains) ** profile.alltoall_decay)


def pairwise_alltoall(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers
) -> list[Candidate]:
    n, m = shape.ranks, shape.max_per_domain
    nvl_s = size * (m - 1) / n / (profile.nvlink_ring_gb_per_s * GB)
    net_s, tier = 0.0, "nvlink"
    multi = shape.multi_domain
    if shape.nodes == 1:  # every peer's op fills its channels' chunk pipeline (send_recv)
        peer_bytes = size // n
        nvl_s *= p2p.p2p_nvlink_fill(peer_bytes, p2p.p2p_nvlink_channels(peer_bytes, n), profile)
    if multi:
        net_bw = t.p2p_out_gb_per_s * alltoall_efficiency(shape, profile)
        net_s = m * size * (n - m) / n / (net_bw * GB)
        if net_s > nvl_s:
            tier = t.p2p_tier
    # NCCL all-to-all is grouped send/recv without a tuner model: one p2p latency plus a
    # per-peer issue cost (one NVLink LL step each)
    issue_us = (n - 1) * nccl.NVLINK_US["ring"][LL] * t.nvlink_scale
    out = []
    for proto in (LL, SIMPLE):
        hop = nccl.ring_latency_us(multi, t, 1, 1 if multi else 0, proto)
        slow = 1 / nccl.RING_PROTOCOL_FACTOR[proto]
        out.append(
            Candidate(
                "pairwise",
                nccl.PROTOCOLS[proto],
                (hop + issue_us) * US,
                slow * max(nvl_s, net_s),
                tier,
            )
        )
    return out


def send_recv(size: int, shape: GroupShape, profile: FabricProfile, t: Tiers) -> list[Candidate]:
    """p2p: NVLink inside a domain, one NIC across (PXN keeps it on the peer's rail) at the
    all-to-all efficiency of p2p across NICs. Inside one node the op runs on the channels NCCL
    gives it for its size (``p2p.p2p_nvlink_channels``), each moving one NVLink's worth,
    through a chunk pipeline (``p2p.p2p_nvlink_fill``)."""
    multi = shape.multi_domain
    tier = t.p2p_tier if multi else "nvlink"
    peer, fill, protocols = t.one_nic_gb_per_s, 1.0, nccl.DEFAULT_PROTOCOLS
    if multi:
        peer = min(peer, p2p.p2p_peer_gb_per_s(shape, profile, t.channels))
        peer *= profile.alltoall_efficiency
    elif shape.nodes == 1:
        channels = p2p.p2p_nvlink_channels(size, shape.ranks)
        per_channel = p2p.P2P_CHANNEL_NVLINK_GB_PER_S.get(profile.arch, peer)
        peer = min(peer, channels * per_channel)
        fill = p2p.p2p_nvlink_fill(size, channels, profile)
        protocols = (p2p.p2p_protocol(size, channels),)
    return [
        Candidate(
            "p2p",
            nccl.PROTOCOLS[proto],
            nccl.ring_latency_us(multi, t, 1, 1 if multi else 0, proto) * US,
            fill * size / (ring_bw(peer, t, proto, profile.arch) * GB),
            tier,
        )
        for proto in protocols
    ]
