"""NCCL's tuning rules and the per-tier bandwidths and latencies a communicator can reach.

Theory of operation
-------------------
NCCL picks an (algorithm, protocol) pair per call by evaluating, for each enabled pair,
``time = latency + bytes / bandwidth`` and taking the minimum (``enqueue.cc``,
``tuning.cc: ncclTopoGetAlgoTime``). Its *structure* is kept here: which algorithm exists for
which collective and scope, the protocol factors (LL 50 %, LL128 120/128 ≈ 0.92, Simple 1),
the per-channel bandwidth caps (``perChMaxTreeBws`` …) and how steps add latency (the tree's
size correction, ``treeCorrectionFactor``, is :mod:`fabricfit.cost.tuner`'s). NCCL 2.30.7's
tables (``src/graph/tuning.cc`` @5067397c) are reproduced below.

Its latency *constants* are selection heuristics, not wall time (nccl-tests overlaps launches;
network steps cost more than NCCL assumes once NIC, PCIe and proxy are in the path), so the
wall-time latency comes from the profile, fitted per tier from measured small-message curves:
``base_latency_us`` per call and ``nvlink_hop_latency_us`` per step inside an NVLink domain,
``net_base_latency_us`` per call and ``net_hop_latency_us`` per step once the call crosses NICs.
NCCL's per-protocol and per-algorithm tables are kept as *ratios* to the ring-LL entries the
profile replaces, so LL128 and Simple stay proportionally slower to start, as in NCCL.

Bandwidth of the tiers: a ring that stays in one NVLink domain runs at the NVLink ring rate; a
ring across domains enters and leaves each domain once per channel, so its bus bandwidth is the
domain's NIC egress (NICs the group can drive × per-NIC rate, at most the NICs NCCL's channels
reach from one domain), bounded by NVLink ``B·m/(m−1)`` for the m ranks chained inside the
domain; traffic that leaves a rail group or changes rails crosses the spine and pays the
oversubscription of the tiers it climbs; ``load`` groups sharing the busiest NIC split it evenly.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Final, NamedTuple

from fabricfit.cost.shape import GroupShape
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.profiles.ncclsetup import MODEL_ALGORITHM, release

PROTOCOLS: Final = ("LL", "LL128", "Simple")
LL, LL128, SIMPLE = 0, 1, 2

# Base latency (µs) per algorithm and protocol [LL, LL128, Simple] (tuning.cc baseLatencies).
BASE_US: Final[dict[str, tuple[float, float, float]]] = {
    "ring": (6.6, 14.0, 8.4),
    "tree": (6.8, 14.0, 8.4),
    "pat": (8.0, 8.0, 8.0),
}
# Per-hop hardware latency (µs) on NVLink and on the network (tuning.cc hwLatencies).
NVLINK_US: Final[dict[str, tuple[float, float, float]]] = {
    "ring": (0.6, 1.9, 3.4),
    "tree": (0.6, 1.25, 4.0),
    "pat": (4.0, 4.0, 4.0),
}
NVLINK_US_NVLS_TREE: Final = 25.0  # hwLat NVLINK NVLS-tree Simple (its base latency is 0)
NET_US: Final[dict[str, tuple[float, float, float]]] = {
    "ring": (2.7, 4.0, 14.0),
    "tree": (5.0, 8.5, 14.0),
    "pat": (14.0, 14.0, 14.0),
    "nvls-tree": (20.9, 20.9, 20.9),
}
# Wall-time network hop per protocol: the proxy sends an LL128 or a Simple step only once the GPU
# has advanced the step's tail counter, an LL step as soon as its line flags are written (net.cc
# sendProxyProgress @5067397c), so an LL128 step waits on the NIC as long as a Simple one. NCCL's
# tuner gives LL128 its own lower constant; that stays in NCCL's choice, not in wall time.
NET_HOP_PROTOCOL: Final = (LL, SIMPLE, SIMPLE)
# A Simple receive across NICs is handed to the GPU only after the proxy's GPUDirect flush, a read
# back through the NIC (net.cc recvProxyProgress): a second network round per step. LL and LL128
# carry their own flags and need none. NCCL flushes on Ampere and earlier, and on Hopper and later
# only before 2.19 (NCCL_NET_FORCE_FLUSH defaulted to 1 in v2.18.5-1, 0 from v2.19.1-1;
# paths.cc ncclTopoNeedFlush @5067397c: compute capability < 9.0, or a DataDirect NIC reached
# over Grace's C2C, which no preset here has). NCCL's tuner charges Simple the net latency twice
# whatever the GPU ("Also add the flush extra latency", tuning.cc:388-389): its choice only.
FLUSH_ARCHS: Final = frozenset({"ampere"})
NO_FLUSH_FROM_RELEASE: Final = (2, 19, 1)
# Channel speeds NCCL's ring search tries across nodes, fastest first (search.cc speedArrayInter).
SPEEDS_INTER: Final = {
    "ampere": (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0),
    "hopper": (48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0),
    "blackwell": (96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0,
                  12.0, 6.0, 3.0),
}  # fmt: skip
MAX_CHANNELS: Final = 64
# Collective channels of a communicator inside one 8-GPU NVSwitch node: 24 on A100 and H100
# (nccl-tests#100 "Channel 23/24"; nccl#1367: 12 rings, doubled).
NODE_CHANNELS: Final = 24
# getNetOverhead: 1 µs on Intel and non-x86 hosts, 2 on AMD (×3 for Simple), a floor on NCCL's
# intra-node steps of a multi-node ring (its selection only; the wall-time model charges the
# slowest hop instead). The Intel value stands for every preset: with AMD's, no judged row of the
# AMD hosts (dgx-a100, oci-bm-gpu4-8, aws-p5) changes algorithm or protocol.
NET_OVERHEAD_US: Final = (1.0, 1.0, 3.0)
# The entries the profile's wall-time latencies stand for (ring LL); the rest scale with them.
NCCL_BASE_US: Final = 6.6
NCCL_NVLINK_HOP_US: Final = 0.6
NCCL_NET_HOP_US: Final = 2.7
# Ring Simple all-reduce across nodes: latency ×1.4 once bytes/(channels·ranks) >= 64 (SM80+).
RING_SIMPLE_MULTI_NODE_FACTOR: Final = 1.4

# Ring protocol bandwidth factors (tuning.cc: LL 0.5·busBw, LL128 0.92·busBw, Simple 1).
RING_PROTOCOL_FACTOR: Final = (0.5, 0.92, 1.0)
# LL bus-bandwidth ceiling (GB/s), llMaxBws: single node by architecture; multi-node rows
# reachable on x86 are 39 (2 nodes) and 20.4 (more) (tuning.cc llMaxBws).
LL_MAX_ONE_NODE_GB_PER_S: Final = {"ampere": 87.7, "hopper": 141.0, "blackwell": 282.0, "tpu": 1e9}
LL_MAX_TWO_NODES_GB_PER_S: Final = 39.0
LL_MAX_MANY_NODES_GB_PER_S: Final = 20.4
# Per-channel caps (GB/s) by architecture, indexed [1 node, 2 nodes, more] (tuning.cc).
PER_CHANNEL_TREE: Final = {
    "ampere": (24.0, 23.6, 17.8),
    "hopper": (38.7, 41.4, 36.0),
    "blackwell": (70.0, 42.8, 24.0),
}
PER_CHANNEL_TREE_LL128: Final = {
    "ampere": (20.0, 20.0, 20.0),
    "hopper": (36.7, 36.7, 29.0),
    "blackwell": (55.6, 31.67, 20.0),
}
PER_CHANNEL_RING_LL128: Final = {"ampere": 20.0, "hopper": 36.7, "blackwell": 40.0}
# NVLS efficiency NCCL's tuner applies to the NVLink side of NVLS / NVLS-tree (tuning.cc).
NVLS_TUNER_EFFICIENCY: Final = {"hopper": 0.85, "blackwell": 0.74}
PER_CHANNEL_NVLS_TREE: Final = {"hopper": (0.0, 57.7, 45.5), "blackwell": (0.0, 96.0, 80.0)}
# The NCCL release whose tables these are; a profile's ``nccl_version`` names the one its
# platform runs. Tuner constants older releases had instead (NVIDIA/nccl tags v2.24.3-1 …
# v2.29.7-1, src/graph/tuning.cc): NVLS-tree's network hop was 14 µs until 2.28.7 (20.9 from
# 2.28.9), and NVLS-tree had no per-channel bandwidth cap before 2.28 (perChMaxNVLSTreeBws).
MODELLED_RELEASE: Final = (2, 30, 7)
# From 2.23.4 NCCL's tuner charges every algorithm the tree's network hop when each node holds
# one rank (tuning.cc "With ppn=1 latencies are fully exposed"; not in v2.22.3-1).
EXPOSED_NET_HOP_FROM_RELEASE: Final = (2, 23, 4)
NVLS_TREE_NET_US_UNTIL_2_28_7: Final = 14.0
# Tree: Simple 0.92·busBw; LL busBw/3.8; LL128 ×120/128 across nodes; bus→alg ×0.5.
TREE_SIMPLE_FACTOR: Final = 0.92
TREE_LL_DIVISOR: Final = 3.8
TREE_LL128_FACTOR: Final = 120 / 128
# PAT (RS/AG, one rank per node): ×0.75 of the ring bandwidth (tuning.cc).
PAT_FACTOR: Final = 0.75


def node_index(shape: GroupShape) -> int:
    """Column of NCCL's per-node-count tables: 1 node, 2 nodes, more (domains count as nodes)."""
    return 0 if shape.domains <= 1 else 1 if shape.domains == 2 else 2


# Protocols NCCL enables by default: all three. LL128 needs the NIC within a PCIe switch of the
# GPU on Ampere (typeInter <= PATH_PXB; PXN also on SM90+) and NVLink inside the node
# (tuning.cc:518-531 @5067397c), which every preset's board has (DGX/HGX: a NIC beside each GPU
# pair under one switch); a system whose NICs hang off the CPU says so in its profile
# (``nccl_protocols: [LL, Simple]``). p2p (send-recv, all-to-all) keeps these whatever
# NCCL_PROTO says: NCCL picks a p2p op's protocol by size alone (enqueue.cc:932-933).
DEFAULT_PROTOCOLS: Final[tuple[int, ...]] = (LL, LL128, SIMPLE)


def protocols(profile: FabricProfile) -> tuple[int, ...]:
    """Protocols a collective may run in: the platform's ``nccl_protocols`` when it sets them
    (NCCL_PROTO naming LL128 enables it on every path, tuning.cc 518-536), else the default."""
    if profile.nccl_protocols is None:
        return DEFAULT_PROTOCOLS
    return tuple(i for i, name in enumerate(PROTOCOLS) if name in profile.nccl_protocols)


@lru_cache(maxsize=256)
def algorithms(profile: FabricProfile, *, forced: bool) -> frozenset[str]:
    """Algorithms NCCL may run on the platform: its ``nccl_algorithms`` (NCCL_ALGO) unless the
    job forces one (a job's own NCCL_ALGO replaces the platform's), without NVLS and NVLS-tree
    when ``nvls_enabled`` is false (NCCL_NVLS_ENABLE=0 leaves nvlsSupport 0, nvls.cc:262)."""
    names = profile.nccl_algorithms if profile.nccl_algorithms and not forced else MODEL_ALGORITHM
    found = {MODEL_ALGORITHM[n] for n in names if n in MODEL_ALGORITHM}
    if not profile.nvls_enabled:
        found -= {"nvls", "nvls-tree"}
    return frozenset(found)


def spine_extra_us(shape: GroupShape, profile: FabricProfile) -> float:
    """Extra switch traversals per network step: leaf→spine→leaf, and the core beyond it."""
    if not shape.crosses_spine:
        return 0.0
    hops = 4 if shape.crosses_core else 2
    return hops * profile.switch_hop_latency_us


def pow2_up(n: int) -> int:
    return 1 << max(n - 1, 0).bit_length()


def collective_channels(nics: float, profile: FabricProfile) -> int:
    """Channels of a communicator that crosses nodes: one ring per NIC at the fastest search
    speed the NIC allows, duplicated when that speed is >= 25 GB/s (not on Hopper and later below
    50 GB/s with more than 4 rings, search.cc ncclTopoDupChannels), then doubled (connect.cc)."""
    line = profile.nic_gbit_per_s / 8
    speeds = SPEEDS_INTER.get(profile.arch, SPEEDS_INTER["hopper"])
    speed = next((s for s in speeds if s <= line), speeds[-1])
    rings = max(int(nics), 1)
    hopper_plus = profile.arch in ("hopper", "blackwell")
    if speed >= 25 and not (hopper_plus and speed < 50 and rings > 4):
        rings *= 2
    return min(MAX_CHANNELS, 2 * rings)


def ll_cap_gb_per_s(shape: GroupShape, profile: FabricProfile) -> float:
    if shape.nodes <= 1:
        return LL_MAX_ONE_NODE_GB_PER_S.get(profile.arch, 141.0)
    return LL_MAX_TWO_NODES_GB_PER_S if shape.nodes == 2 else LL_MAX_MANY_NODES_GB_PER_S


def channel_nics(shape: GroupShape, profile: FabricProfile) -> float:
    """NICs (= inter-domain channels of NCCL's graph) one collective drives out of a domain."""
    nics: float = shape.min_nics_per_domain
    if profile.max_collective_nics_per_domain:
        nics = min(nics, profile.max_collective_nics_per_domain)
    return nics


def _oversubscription(shape: GroupShape, profile: FabricProfile) -> float:
    if not shape.crosses_spine:
        return 1.0
    over = profile.leaf_oversubscription
    if shape.crosses_core:
        over = max(over, profile.spine_oversubscription)
    return over


def scaleout_gb_per_s(
    shape: GroupShape, profile: FabricProfile, load: float, *, channels: bool = True
) -> tuple[float, str]:
    """Bus bandwidth of the inter-domain tier for this group, and the tier that limits it.
    ``channels``: ring/tree traffic leaves a domain through one NIC per NCCL channel, so the
    profile's per-domain NIC bound applies; p2p-based all-to-all uses every rank's own NIC."""
    nics = channel_nics(shape, profile) if channels else shape.min_nics_per_domain
    nic = nics * profile.nic_gb_per_s / load
    over = _oversubscription(shape, profile)
    return (nic / over, "spine") if over > 1.0 else (nic, "nic")


def ring_of(
    shape: GroupShape, profile: FabricProfile, out: float, out_tier: str
) -> tuple[float, str]:
    nvlink = profile.nvlink_ring_gb_per_s
    if not shape.multi_domain:
        return nvlink, "nvlink"
    m = shape.max_per_domain
    if m > 1 and nvlink * m / (m - 1) < out:
        return nvlink * m / (m - 1), "nvlink"
    return out, out_tier


def ring_gb_per_s(shape: GroupShape, profile: FabricProfile, load: float) -> tuple[float, str]:
    """Ring bus bandwidth: NVLink inside one domain, else min(NIC egress, NVLink chain)."""
    out, tier = scaleout_gb_per_s(shape, profile, load) if shape.multi_domain else (0.0, "")
    return ring_of(shape, profile, out, tier)


def nvls_algbw_gb_per_s(ranks: int, profile: FabricProfile) -> float:
    """NVLS all-reduce algbw inside one domain: each GPU moves S(1 + 1/n) per direction
    (multimem ld_reduce of its chunk, multicast store of the result), so algbw = B·n/(n+1);
    B = line × nvls_efficiency. Reproduces 245→273 GB/s algbw at 4→8 H100s (nccl#1455)."""
    return profile.nvlink_gb_per_s * profile.nvls_efficiency * ranks / (ranks + 1)


class Tiers(NamedTuple):
    """Everything about a group's tiers the algorithms need, computed once per estimate."""

    out_gb_per_s: float  # scale-out bus bandwidth for ring/tree traffic (channel-bound)
    out_tier: str
    p2p_out_gb_per_s: float  # scale-out for p2p all-to-all: every rank's own NIC
    p2p_tier: str
    one_nic_gb_per_s: float  # a single NIC path (send-recv caps it by p2p_peer_gb_per_s)
    ring_gb_per_s: float
    ring_tier: str
    channels: float  # inter-domain channels (one per NIC driven), for the per-channel caps
    ll_cap_gb_per_s: float
    base_scale: float  # wall-time base latency / NCCL's
    nvlink_scale: float  # wall-time NVLink step / NCCL's
    net_scale: float  # wall-time network step / NCCL's
    net_base_us: float  # per call once NICs are crossed
    spine_us: float  # extra switch latency per network step
    simple_net_rounds: float  # network rounds of a Simple step: 2 with the GPUDirect flush
    protocols: tuple[int, ...]  # collectives' protocols (the platform's NCCL_PROTO)
    algorithms: frozenset[str]  # collectives' algorithms (NCCL_ALGO, NCCL_NVLS_ENABLE)


def tiers(shape: GroupShape, profile: FabricProfile, load: float, *, forced: bool = False) -> Tiers:
    multi = shape.multi_domain
    out, p2p, tier, nics = 0.0, 0.0, "nvlink", 0.0
    if multi:
        over = _oversubscription(shape, profile)
        tier = "spine" if over > 1.0 else "nic"
        per_nic = profile.nic_gb_per_s / (load * max(over, 1.0))
        if profile.scaleout_decay and shape.domains > 2:  # a calibrated cluster's own decay
            per_nic *= (2 / shape.domains) ** profile.scaleout_decay
        nics = channel_nics(shape, profile)
        out, p2p = nics * per_nic, shape.min_nics_per_domain * per_nic
    ring, ring_tier = ring_of(shape, profile, out, tier)
    return Tiers(
        out_gb_per_s=out,
        out_tier=tier,
        p2p_out_gb_per_s=p2p,
        p2p_tier=tier,
        one_nic_gb_per_s=p2p / shape.min_nics_per_domain if multi else ring,
        ring_gb_per_s=ring,
        ring_tier=ring_tier,
        channels=nics,
        ll_cap_gb_per_s=ll_cap_gb_per_s(shape, profile),
        base_scale=profile.base_latency_us / NCCL_BASE_US,
        nvlink_scale=profile.nvlink_hop_latency_us / NCCL_NVLINK_HOP_US,
        net_scale=profile.net_hop_latency_us / NCCL_NET_HOP_US,
        net_base_us=profile.net_base_latency_us if multi else 0.0,
        spine_us=spine_extra_us(shape, profile),
        simple_net_rounds=2.0 if gpudirect_flush(profile) else 1.0,
        protocols=protocols(profile),
        algorithms=algorithms(profile, forced=forced),
    )


def ring_latency_us(
    multi_domain: bool, t: Tiers, steps: int, inter_steps: int, proto: int
) -> float:
    """Ring latency: base + steps × per-step hop. Inside one domain a step is an NVLink hop;
    across domains the ring's steps run in lock-step, so every step waits for the slowest hop
    it crosses — the network one (NCCL sums hop types instead, tuning.cc), at the wall-time
    cost of the protocol's proxy hand-off (``NET_HOP_PROTOCOL``: LL128 as Simple)."""
    base = BASE_US["ring"][proto] * t.base_scale
    intra = NVLINK_US["ring"][proto] * t.nvlink_scale
    if not multi_domain or inter_steps == 0:
        return base + steps * intra
    inter = net_hop_us(t, "ring", proto)
    return base + t.net_base_us + steps * max(intra, inter)


def net_hop_us(t: Tiers, algorithm: str, proto: int) -> float:
    """Wall time of one step across NICs: the protocol's proxy hand-off (``NET_HOP_PROTOCOL``)
    plus the spine's switches, twice for Simple where its receive waits for the GPUDirect
    flush (``gpudirect_flush``)."""
    hop = NET_US[algorithm][NET_HOP_PROTOCOL[proto]] * t.net_scale + t.spine_us
    return (t.simple_net_rounds if proto == SIMPLE else 1.0) * hop


def gpudirect_flush(profile: FabricProfile) -> bool:
    """Whether NCCL flushes a GPUDirect receive across NICs on this platform: always on Ampere
    and earlier, on newer GPUs only before 2.19 (``FLUSH_ARCHS``, ``NO_FLUSH_FROM_RELEASE``)."""
    return profile.arch in FLUSH_ARCHS or nccl_release(profile) < NO_FLUSH_FROM_RELEASE


def tuner_net_hop_us(
    algorithm: str, proto: int, profile: FabricProfile, *, one_rank_per_node: bool = False
) -> float:
    """What NCCL's tuner charges one step across NICs when it chooses (tuning.cc:386-391
    @5067397c): its network hop constant — the tree's for every algorithm when each node holds
    one rank ("latencies are fully exposed", from 2.23.4) — plus the latency the network plugin
    reports (``net_plugin_latency_us``; search.cc:745 copies it into the graph), that once more
    for Simple ("Also add the flush extra latency"). Choice only: wall time uses ``net_hop_us``."""
    rounds = 2.0 if proto == SIMPLE else 1.0
    exposed = one_rank_per_node and nccl_release(profile) >= EXPOSED_NET_HOP_FROM_RELEASE
    hop = NET_US["tree" if exposed else algorithm][proto]
    if algorithm == "nvls-tree" and nccl_release(profile) < (2, 28, 9):
        hop = NVLS_TREE_NET_US_UNTIL_2_28_7
    return hop + rounds * profile.net_plugin_latency_us


def nccl_release(profile: FabricProfile) -> tuple[int, int, int]:
    """The NCCL release whose tuner chooses for ``profile`` (its ``nccl_version``, else the
    release the model's tables follow)."""
    return release(profile.nccl_version) if profile.nccl_version else MODELLED_RELEASE


def nvls_tree_channel_caps(profile: FabricProfile) -> tuple[float, float, float]:
    """NCCL's per-channel NVLS-tree bandwidth caps [1 node, 2, more] as the tuner applies them:
    none before 2.28."""
    if nccl_release(profile) < (2, 28, 0):
        return (1e9, 1e9, 1e9)
    return PER_CHANNEL_NVLS_TREE.get(profile.arch, (1e9, 1e9, 1e9))


def log2_floor(n: int) -> int:
    return n.bit_length() - 1 if n > 0 else 0


def log2_domains(shape: GroupShape) -> int:
    return math.ceil(math.log2(shape.domains)) if shape.domains > 1 else 0
