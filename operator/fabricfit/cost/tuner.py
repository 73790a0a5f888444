"""What NCCL's tuner would run: its model of time, which chooses, apart from wall time.

Theory of operation
-------------------
NCCL picks an algorithm and protocol per call by the lowest time in its own table
(``topoGetAlgoInfo``, src/enqueue.cc:2028-2043 @5067397c): bandwidths from its graph search
and per-channel caps, latencies summed per hop type, a size correction for trees
(``ncclTopoGetAlgoTime``, src/graph/tuning.cc:630-656). That table is not wall time, so the
model keeps the two apart: :mod:`fabricfit.cost.algorithms` prices candidates at wall time,
and this module decides which of them NCCL would run — a cross-domain ring in the protocol
NCCL's table picks (:func:`nccl_ring_protocol`), a tree all-reduce only where NCCL's table
times it below ring and NVLS-tree (:func:`nccl_prefers_tree`). So ``auto`` can predict a time
above another candidate the model prices, exactly where NCCL itself runs the slower one;
:func:`ruled_out_by_nccl` names why, with the NCCL line, for each such candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from fabricfit.cost import chunks, nccl
from fabricfit.cost.nccl import LL, LL128, PROTOCOLS, SIMPLE, Tiers
from fabricfit.cost.shape import GroupShape
from fabricfit.fabric.profiles import FabricProfile

US = 1e-6
GB = 1e9
# treeCorrectionFactor[proto][log2(bytes/64)] for 64 B … 256 MiB (tuning.cc); 1 beyond.
TREE_CORRECTION: Final = (
    (1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5,
     .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1, 1),
    (1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6,
     .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1, 1),
    (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
)  # fmt: skip
# Buckets NCCL applies the table in: 0-22 for tree all-reduce, 0-23 for NVLS-tree (tuning.cc:640,
# 643 @5067397c).
TREE_BUCKETS: Final = 23
NVLS_TREE_BUCKETS: Final = 24

# Where NCCL's own code makes it pass over a candidate (src/… @5067397c).
NOT_NCCL = "not an NCCL algorithm (the model prices it only when asked for)"
SET_UP = (
    "the platform's NCCL set-up disables it: NCCL_ALGO and NCCL_PROTO zero its bandwidth in "
    "NCCL's table, which never picks it (src/graph/tuning.cc:537-538); NCCL_NVLS_ENABLE=0 "
    "leaves no NVLS (src/transport/nvls.cc:262)"
)
TREE_TIMED_SLOWER = (
    "NCCL's tuner times tree above ring or NVLS-tree and runs the fastest in its table "
    "(src/enqueue.cc:2035-2043): its per-channel tree caps (src/graph/tuning.cc:330-335), its "
    "size correction (tuning.cc:639-642) and hop-type latencies (tuning.cc:402-412, 416, 428)"
)
PROTOCOL_TIMED_SLOWER = (
    "NCCL's tuner times another protocol lower for a ring across nodes and runs that one "
    "(src/enqueue.cc:2035-2043; ring latencies src/graph/tuning.cc:402-412, x1.4 tuning.cc:647-650)"
)


def ring_bw(bus: float, t: Tiers, proto: int, arch: str) -> float:
    """A ring's busbw in ``proto`` from the tier's ``bus``: NCCL's protocol factors, the LL
    ceiling and LL128's per-channel cap (tuning.cc:327-329 @5067397c)."""
    if proto == LL:
        return min(bus * nccl.RING_PROTOCOL_FACTOR[LL], t.ll_cap_gb_per_s)
    bw = bus * nccl.RING_PROTOCOL_FACTOR[proto]
    if proto == LL128 and t.channels:
        bw = min(bw, t.channels * nccl.PER_CHANNEL_RING_LL128.get(arch, 1e9))
    return bw


@dataclass(frozen=True, slots=True)
class RingSteps:
    """A ring's schedule: ``steps`` steps of which ``inter`` cross domains, the collective's
    busbw ``factor``, and whether it is an all-reduce (NCCL's multi-node Simple factor)."""

    steps: int
    inter: int
    factor: float
    allreduce: bool = False


def _tuner_tiers(shape: GroupShape, profile: FabricProfile, t: Tiers) -> Tiers:
    """The tiers as NCCL's tuner sees them: its NICs' speed, not the fabric's taper or load, and
    a channel per NIC port (``nic_ports_per_rail``: more channels, each slower, so the
    per-channel caps of the tree bind later; the ports' sum is the rail's rate)."""
    out = t.channels * profile.nic_gb_per_s
    return t._replace(
        out_gb_per_s=out,
        ring_gb_per_s=nccl.ring_of(shape, profile, out, "nic")[0],
        channels=t.channels * profile.nic_ports_per_rail,
    )


def _nccl_ring_s(
    size: int,
    shape: GroupShape,
    profile: FabricProfile,
    t: Tiers,
    schedule: RingSteps,
    *,
    proto: int,
) -> float:
    """NCCL's tuner time for a ring across domains (tuning.cc 400-412 @5067397c): base, the
    intra-domain steps at the NVLink hop (at least the net overhead), the inter-domain steps at
    the tuner's network hop (``nccl.tuner_net_hop_us``: with the plugin's latency), ×1.4 for a
    Simple all-reduce once chunks are full (``ncclTopoGetAlgoTime``); ``t`` as the tuner sees it
    (``_tuner_tiers``)."""
    steps, inter = schedule.steps, schedule.inter
    intra = max(nccl.NVLINK_US["ring"][proto], nccl.NET_OVERHEAD_US[proto])
    one = shape.ranks == shape.domains
    net = nccl.tuner_net_hop_us("ring", proto, profile, one_rank_per_node=one)
    lat = nccl.BASE_US["ring"][proto] + (steps - inter) * intra + inter * net
    if proto == SIMPLE and schedule.allreduce and size >= 64 * shape.ranks * max(t.channels, 1):
        lat *= nccl.RING_SIMPLE_MULTI_NODE_FACTOR
    bw = ring_bw(t.ring_gb_per_s, t, proto, profile.arch)
    return lat * US + schedule.factor * size / (bw * GB)


def nccl_ring_protocol(
    size: int, shape: GroupShape, profile: FabricProfile, t: Tiers, schedule: RingSteps
) -> int:
    """The protocol NCCL's tuner runs a cross-domain ring in: its constants, not wall time. On 10
    H100 nodes it keeps LL128 for all-gather up to ~240 MB and then switches to Simple, whose
    steps pay a flush round across NICs where NCCL still flushes (``nccl.gpudirect_flush``)."""
    seen = _tuner_tiers(shape, profile, t)
    return min(
        t.protocols, key=lambda p: _nccl_ring_s(size, shape, profile, seen, schedule, proto=p)
    )


def tree_tuner_alg_gb_per_s(
    shape: GroupShape, profile: FabricProfile, t: Tiers, proto: int
) -> float:
    """Tree all-reduce algbw as NCCL's tuner computes it (tuning.cc 306-380): one channel per
    NIC at its rate, doubled at ≤ 2 domains (search.cc:1280), per-channel caps, ×0.5 bus→alg."""
    index = nccl.node_index(shape)
    doubled = 2.0 if shape.domains <= 2 else 1.0
    bus = doubled * t.out_gb_per_s
    if proto == LL:
        bus = min(bus / nccl.TREE_LL_DIVISOR, t.ll_cap_gb_per_s)
    elif proto == LL128:
        cap = nccl.PER_CHANNEL_TREE_LL128.get(profile.arch, (1e9,) * 3)[index]
        bus = min(bus * nccl.TREE_LL128_FACTOR, t.channels * cap)
    else:
        cap = nccl.PER_CHANNEL_TREE.get(profile.arch, (1e9,) * 3)[index]
        bus = min(bus * nccl.TREE_SIMPLE_FACTOR, t.channels * cap)
    return bus / 2


def nccl_prefers_tree(size: int, shape: GroupShape, profile: FabricProfile, t: Tiers) -> bool:
    """NCCL's own choice of tree over ring and NVLS-tree all-reduce: its latency constants (hop
    types summed, tuning.cc 400-420; network hops with the plugin's latency) and its bandwidths
    (per-channel caps, size correction)."""
    n, d, m = shape.ranks, shape.domains, shape.max_per_domain
    schedule = RingSteps(2 * (n - 1), 2 * (d - 1), 2 * (n - 1) / n, allreduce=True)
    t = _tuner_tiers(shape, profile, t)
    ring_s, tree_s = math.inf, math.inf
    for proto in t.protocols:
        ring_s = min(ring_s, _nccl_ring_s(size, shape, profile, t, schedule, proto=proto))
        net = nccl.tuner_net_hop_us("tree", proto, profile)
        hops = (m - 1) * nccl.NVLINK_US["tree"][proto] + nccl.log2_domains(shape) * net
        lat = nccl.BASE_US["tree"][proto] + 2 * hops
        alg = tree_tuner_alg_gb_per_s(shape, profile, t, proto) * tree_correction(size, proto)
        tree_s = min(tree_s, lat * US + size / (alg * GB))
    return tree_s <= min(ring_s, _nccl_nvls_tree_s(size, shape, profile, t))


def _nccl_nvls_tree_s(size: int, shape: GroupShape, profile: FabricProfile, t: Tiers) -> float:
    """NCCL's tuner time for NVLS-tree all-reduce (tuning.cc 306-322, 380, 426): per channel the
    NVLink side (line × the tuner's NVLS efficiency × (ch−1)/ch, ×2 for all-reduce), the NIC side
    (×2 at 2 domains) and the per-channel cap (from 2.28); bus→alg nRanks/nsteps; latency 25 µs
    inside the domain plus 2·log2(domains) network hops of 20.9 µs (14 until 2.28.7) and twice
    the plugin's latency (Simple, ``nccl.tuner_net_hop_us``); the constants of the profile's NCCL
    release (``nccl.nccl_release``). inf where NVLS-tree does not exist."""
    if not nvls_runs(profile, t, "nvls-tree") or not shape.multi_domain or shape.max_per_domain < 2:
        return math.inf
    n, d = shape.ranks, shape.domains
    channels, _ = chunks.nvls_tree_tuning(shape, profile)
    eff = nccl.NVLS_TUNER_EFFICIENCY.get(profile.arch, 0.85)
    intra = 2 * profile.nvlink_gb_per_s * eff * (channels - 1) / channels
    inter = (2.0 if d <= 2 else 1.0) * t.out_gb_per_s
    caps = nccl.nvls_tree_channel_caps(profile)
    alg = min(intra, inter, channels * caps[nccl.node_index(shape)]) * n / (2 * (n - 1))
    if x86_blackwell(profile):
        alg *= tree_correction(size, SIMPLE, NVLS_TREE_BUCKETS)
    net = nccl.tuner_net_hop_us("nvls-tree", SIMPLE, profile)
    lat = nccl.NVLINK_US_NVLS_TREE + 2 * nccl.log2_floor(d) * net
    return lat * US + size / (alg * GB)


def x86_blackwell(profile: FabricProfile) -> bool:
    """NCCL scales NVLS-tree by the tree's size correction on Blackwell with an x86 host
    (tuning.cc:643-646 @5067397c: minCompCap >= 100, NCCL_TOPO_CPU_ARCH_X86): DGX/HGX B200 nodes,
    read as a Blackwell profile whose NVLink domain is one node (GB200's Grace trays are not)."""
    return profile.arch == "blackwell" and profile.gpus_per_nvlink_domain == profile.gpus_per_node


def nvls_runs(profile: FabricProfile, t: Tiers, algorithm: str) -> bool:
    """Whether an NVLS-family algorithm (Simple only) can run: NVLink SHARP in the hardware, and
    the algorithm and Simple allowed by the platform's NCCL set-up."""
    return profile.nvls and algorithm in t.algorithms and SIMPLE in t.protocols


def ruled_out_by_nccl(
    collective: str,
    size: int,
    shape: GroupShape,
    profile: FabricProfile,
    picked: tuple[str, str],
    *,
    load: float = 1.0,
) -> str | None:
    """Why NCCL would not run ``picked`` (algorithm, protocol) for this call although the model
    prices it when forced (the NCCL source that makes it so), or None when ``auto`` weighs it."""
    algorithm, protocol = picked
    if profile.torus is not None:
        return None
    if algorithm == "hierarchical":
        return NOT_NCCL
    t = nccl.tiers(shape, profile, load)
    proto = PROTOCOLS.index(protocol)
    if algorithm in ("ring", "tree", "nvls", "nvls-tree", "pat") and (
        algorithm not in t.algorithms or proto not in t.protocols
    ):
        return SET_UP
    if algorithm == "tree" and not nccl_prefers_tree(size, shape, profile, t):
        return TREE_TIMED_SLOWER
    if algorithm == "ring" and shape.multi_domain and collective == "all-reduce":
        n, d = shape.ranks, shape.domains
        steps = RingSteps(2 * (n - 1), 2 * (d - 1), 2 * (n - 1) / n, allreduce=True)
        if proto != nccl_ring_protocol(size, shape, profile, t, steps):
            return PROTOCOL_TIMED_SLOWER
    return None


def tree_correction(size: int, proto: int, buckets: int = TREE_BUCKETS) -> float:
    """NCCL's tuner's factor: the table's power-of-two bucket of ``size`` (tuning.cc:639-646
    @5067397c: buckets 0-22 for tree, 0-23 for NVLS-tree on x86 Blackwell), else 1."""
    index = (size >> 6).bit_length() - 1
    return _bucket(proto, index, buckets) if index >= 0 else 1.0


def tree_efficiency(size: int, proto: int, buckets: int = TREE_BUCKETS) -> float:
    """The same table read as the efficiency it was measured as, for wall time: each value at
    its bucket's power of two (where NCCL's own tests measure, so every power of two keeps
    NCCL's value), linear in log2 size between them. NCCL's tuner steps it once per power of
    two, so its predicted time falls 10-20 % where the factor steps up (at 1, 2, 4 MiB); a
    tree's real transfer does not jump there, and no larger message finishes sooner."""
    position = math.log2(max(size, 1)) - 6  # bucket i starts at 2**(6 + i) bytes
    low = math.floor(position)
    below, above = _bucket(proto, low, buckets), _bucket(proto, low + 1, buckets)
    return below + (above - below) * (position - low)


def fill_efficiency(size: int, loop: int, proto: int, buckets: int = TREE_BUCKETS) -> float:
    """The efficiency a tree's pipeline fill runs at: the message's own below one loop, else
    the lowest between one loop and the message. The fill is loops of the pipeline, so where
    the efficiency rises with size (2 MiB-256 MiB) it keeps its worst: a larger message never
    fills sooner, and where it falls the fill falls with it, as the stream does."""
    if size <= loop:
        return tree_efficiency(size, proto, buckets)
    low, high = math.log2(max(loop, 1)) - 6, math.log2(size) - 6
    inside = range(math.ceil(low), math.floor(high) + 1)
    centres = [_bucket(proto, i, buckets) for i in inside]
    ends = (tree_efficiency(loop, proto, buckets), tree_efficiency(size, proto, buckets))
    return min(*ends, *centres)


def _bucket(proto: int, index: int, buckets: int) -> float:
    return float(TREE_CORRECTION[proto][max(index, 0)]) if index < buckets else 1.0
