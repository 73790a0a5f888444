"""Candidate algorithms for one collective on an NVLink + rail-optimised scale-out fabric.

Theory of operation
-------------------
Each function returns the (algorithm, protocol, seconds, bottleneck) candidates NCCL would
consider for the collective on this group shape; :mod:`fabricfit.cost.collectives` takes the
fastest, as NCCL's tuner does (``enqueue.cc: topoGetAlgoInfo``). Times are
``latency + bytes / bandwidth`` with NCCL's latency tables (:mod:`fabricfit.cost.nccl`) and the
bandwidth of the tiers the group crosses:

* ring (AR: 2(n−1) steps, RS/AG: n−1, broadcast/reduce: a pipelined chain): bandwidth-optimal,
  latency linear in n (Thakur et al. 2005; cost-model.md §4.1);
* tree (AR): NCCL's double binary tree across domains plus a chain inside each domain, latency
  logarithmic in the number of domains; bandwidth 0.92 of the tier (tuning.cc) divided by the
  tree edges the busiest domain carries (``tree_edges``: why 2–3 domains beat the ring, nccl#1801);
* nvls / nvls-tree (AR, hardware with NVLink SHARP): in-switch reduction in the domain, a tree
  across domains;
* hierarchical (AR): reduce-scatter in the domain, all-reduce of 1/m of the buffer per rank on
  its own rail across domains, all-gather in the domain — sequential phases (2D AR, scaling-book);
* pat (RS/AG, one rank per node): logarithmic latency at ×0.75 bandwidth (tuning.cc);
* pairwise (all-to-all): every rank sends 1/n of its buffer to every peer; intra-domain bytes
  over NVLink, the rest over the domain's NICs (cost-model.md §2, §4.2: busbw ≈ N/(N−1) × NIC);
* p2p (send-recv): one NVLink path, or one NIC (PXN keeps it on-rail; nccl 2.12 blog).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from fabricfit.cost import nccl
from fabricfit.cost.nccl import LL, SIMPLE, Tiers
from fabricfit.cost.shape import GroupShape
from fabricfit.fabric.profiles import FabricProfile

US = 1e-6
GB = 1e9


class Candidate(NamedTuple):
    algorithm: str
    protocol: str
    latency_s: float  # the α term
    transfer_s: float  # the bytes / bandwidth term
    bottleneck: str  # tier limiting the transfer term

    @property
    def seconds(self) -> float:
        return self.latency_s + self.transfer_s


def _ring_bw(bus: float, t: Tiers, proto: int) -> float:
    if proto == LL:
        return min(bus * nccl.RING_PROTOCOL_FACTOR[LL], t.ll_cap_gb_per_s)
    return bus * nccl.RING_PROTOCOL_FACTOR[proto]


def ring(
    size: int, shape: GroupShape, t: Tiers, steps: int, inter: int, factor: float
) -> list[Candidate]:
    """Ring with ``steps`` steps of which ``inter`` cross domains; ``factor`` = busbw factor."""
    multi = shape.multi_domain
    return [
        Candidate(
            "ring",
            nccl.PROTOCOLS[proto],
            nccl.ring_latency_us(multi, t, steps, inter, proto) * US,
            factor * size / (_ring_bw(t.ring_gb_per_s, t, proto) * GB),
            t.ring_tier,
        )
        for proto in t.protocols
    ]


def _log2_domains(shape: GroupShape) -> int:
    return math.ceil(math.log2(shape.domains)) if shape.domains > 1 else 0


def tree_edges(domains: int) -> int:
    """Tree edges the busiest domain carries, summed over NCCL's two binary trees (trees.cc
    ncclGetDtree: the second tree mirrors or shifts the first, so a leaf of one is inner in the
    other). Each edge moves half the buffer each way: 2 domains → 2 edges (S per direction),
    3 → 3 (1.5·S), more → 4 (2·S, NCCL's ×0.5 tree bus→alg conversion)."""
    return min(domains, 4) if domains > 1 else 0


def _tree_alg_gb_per_s(shape: GroupShape, profile: FabricProfile, t: Tiers) -> tuple[float, str]:
    """Simple-protocol tree all-reduce expressed as algbw (time = S / algbw). Inside a domain
    the tree is a chain: each GPU port carries the reduce (up) and broadcast (down), 2·S."""
    chain = nccl.TREE_SIMPLE_FACTOR * profile.nvlink_ring_gb_per_s / 2
    if not shape.multi_domain:
        return chain, "nvlink"
    alg = nccl.TREE_SIMPLE_FACTOR * t.out_gb_per_s * 2 / tree_edges(shape.domains)
    if shape.max_per_domain > 1 and chain < alg:
        return chain, "nvlink"
    return alg, t.out_tier


def tree_allreduce(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers
) -> list[Candidate]:
    alg, tier = _tree_alg_gb_per_s(shape, profile, t)
    # relative to Simple: LL busBw/3.8, LL128 ×7/9 on one node (tuning.cc); 0.9 multi-node
    # stands in for NCCL's per-channel LL128 tree caps
    ll128 = 0.845 if shape.nodes <= 1 else 0.9
    factors = (1 / nccl.TREE_LL_DIVISOR / nccl.TREE_SIMPLE_FACTOR, ll128, 1.0)
    log_domains = _log2_domains(shape)
    out = []
    for proto in t.protocols:
        intra = nccl.NVLINK_US["tree"][proto] * t.nvlink_scale
        inter = nccl.NET_US["tree"][proto] * t.net_scale + t.spine_us
        hops = (shape.max_per_domain - 1) * intra + log_domains * inter
        lat = nccl.BASE_US["tree"][proto] + 2 * hops
        bw = alg * factors[proto]
        if proto == LL:
            bw = min(bw, t.ll_cap_gb_per_s / 2)
        out.append(Candidate("tree", nccl.PROTOCOLS[proto], lat * US, size / (bw * GB), tier))
    return out


def nvls_allreduce(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers
) -> list[Candidate]:
    """NVLS in one domain; NVLS-tree (NVLS inside, tree across) over several. Simple only."""
    if not profile.nvls or shape.max_per_domain < 2:
        return []
    intra_lat = nccl.NVLINK_US["nvls"][SIMPLE] * t.nvlink_scale
    intra_s = size / (nccl.nvls_algbw_gb_per_s(shape.max_per_domain, profile) * GB)
    if not shape.multi_domain:
        return [Candidate("nvls", "Simple", intra_lat * US, intra_s, "nvlink")]
    edges = tree_edges(shape.domains)
    inter_s = edges / 2 * size / (nccl.TREE_SIMPLE_FACTOR * t.out_gb_per_s * GB)
    inter_hop = nccl.NET_US["nvls-tree"][SIMPLE] * t.net_scale + t.spine_us
    lat = nccl.BASE_US["nvls-tree"][SIMPLE] + intra_lat + 2 * _log2_domains(shape) * inter_hop
    bottleneck = t.out_tier if inter_s >= intra_s else "nvlink"
    return [Candidate("nvls-tree", "Simple", lat * US, max(intra_s, inter_s), bottleneck)]


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
    if shape.nodes != n or not shape.multi_domain:
        return []
    net = nccl.NET_US["pat"][SIMPLE] * t.net_scale + t.spine_us
    lat = nccl.BASE_US["pat"][SIMPLE] + _log2_domains(shape) * net / 3.5 + 2.8 * n
    transfer = (n - 1) / n * size / (t.ring_gb_per_s * nccl.PAT_FACTOR * GB)
    return [Candidate("pat", "Simple", lat * US, transfer, t.ring_tier)]


def pairwise_alltoall(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers
) -> list[Candidate]:
    n, m = shape.ranks, shape.max_per_domain
    nvl_s = size * (m - 1) / n / (profile.nvlink_ring_gb_per_s * GB)
    net_s, tier = 0.0, "nvlink"
    if shape.multi_domain:
        net_s = m * size * (n - m) / n / (t.p2p_out_gb_per_s * GB)
        if net_s > nvl_s:
            tier = t.p2p_tier
    multi = shape.multi_domain
    hop_table = nccl.NET_US if multi else nccl.NVLINK_US
    scale = t.net_scale if multi else t.nvlink_scale
    # NCCL all-to-all is grouped send/recv without a tuner model: one p2p latency plus a
    # per-peer issue cost (assumed equal to one NVLink LL hop, 0.6 µs, tuning.cc)
    issue_us = (n - 1) * nccl.NVLINK_US["ring"][LL] * t.nvlink_scale
    out = []
    for proto in (LL, SIMPLE):
        lat = nccl.BASE_US["ring"][proto] + hop_table["ring"][proto] * scale + issue_us + t.spine_us
        slow = 1 / nccl.RING_PROTOCOL_FACTOR[proto]
        out.append(
            Candidate("pairwise", nccl.PROTOCOLS[proto], lat * US, slow * max(nvl_s, net_s), tier)
        )
    return out


def send_recv(size: int, shape: GroupShape, t: Tiers) -> list[Candidate]:
    """p2p: NVLink inside a domain, one NIC across (PXN keeps it on the peer's rail)."""
    multi = shape.multi_domain
    tier = t.p2p_tier if multi else "nvlink"
    return [
        Candidate(
            "p2p",
            nccl.PROTOCOLS[proto],
            nccl.ring_latency_us(multi, t, 1, 1 if multi else 0, proto) * US,
            size / (_ring_bw(t.one_nic_gb_per_s, t, proto) * GB),
            tier,
        )
        for proto in t.protocols
    ]
