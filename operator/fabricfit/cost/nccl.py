"""NCCL's tuning constants and the per-tier bandwidths a communicator can reach.

Theory of operation
-------------------
NCCL picks an (algorithm, protocol) pair per call by evaluating, for each enabled pair,
``time = latency + bytes / bandwidth`` and taking the minimum (``enqueue.cc``,
``tuning.cc: ncclTopoGetAlgoTime``). The latency is a base per (algorithm, protocol) plus a
per-hop hardware latency per step, different on NVLink and on the network; the bandwidth is the
graph's link bandwidth times a protocol factor (LL carries 8-byte flag+data lines, 50 %; LL128
120/128 useful bytes, modelled 0.92; Simple full bandwidth with more synchronisation). The tables
below are NCCL 2.30.7's (``src/graph/tuning.cc`` @5067397c, reproduced in
``docs/reference/cost-model.md`` §1.2–1.5). Hardware per-hop latencies of a profile scale NCCL's
NVLink / NET columns, so a slower network in a custom profile slows every protocol alike.

Bandwidth of the tiers (cost-model.md §4.3, §7): a ring that stays in one NVLink domain runs at
the NVLink ring rate; a ring across domains enters and leaves each domain once per channel, so
its bus bandwidth is the domain's NIC egress (NICs the group can drive × per-NIC rate, at most
the NICs NCCL's channels reach from one domain), bounded by NVLink ``B·m/(m−1)`` for the m ranks
chained inside the domain; traffic that leaves a rail
group or changes rails crosses the spine and pays the oversubscription of the tiers it climbs;
``load`` groups sharing the busiest NIC split it evenly.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from fabricfit.cost.shape import GroupShape
from fabricfit.fabric.profiles import FabricProfile

PROTOCOLS: Final = ("LL", "LL128", "Simple")
LL, LL128, SIMPLE = 0, 1, 2

# Base latency (µs) per algorithm and protocol [LL, LL128, Simple] (tuning.cc baseLatencies).
BASE_US: Final[dict[str, tuple[float, float, float]]] = {
    "ring": (6.6, 14.0, 8.4),
    "tree": (6.8, 14.0, 8.4),
    "pat": (8.0, 8.0, 8.0),
    "nvls": (0.0, 0.0, 0.0),
    "nvls-tree": (0.0, 0.0, 0.0),
}
# Per-hop hardware latency (µs) on NVLink and on the network (tuning.cc hwLatencies).
NVLINK_US: Final[dict[str, tuple[float, float, float]]] = {
    "ring": (0.6, 1.9, 3.4),
    "tree": (0.6, 1.25, 4.0),
    "pat": (4.0, 4.0, 4.0),
    "nvls": (25.0, 25.0, 25.0),
    "nvls-tree": (25.0, 25.0, 25.0),
}
NET_US: Final[dict[str, tuple[float, float, float]]] = {
    "ring": (2.7, 4.0, 14.0),
    "tree": (5.0, 8.5, 14.0),
    "pat": (14.0, 14.0, 14.0),
    "nvls": (18.0, 18.0, 18.0),
    "nvls-tree": (20.9, 20.9, 20.9),
}
# getNetOverhead: 1 µs on x86 (×3 for Simple) — a floor on intra-node steps of multi-node rings.
NET_OVERHEAD_US: Final = (1.0, 1.0, 3.0)
# NCCL's reference per-hop values the profile's latencies are relative to (ring LL column).
NCCL_NVLINK_HOP_US: Final = 0.6
NCCL_NET_HOP_US: Final = 2.7

# Ring protocol bandwidth factors (tuning.cc: LL 0.5·busBw, LL128 0.92·busBw, Simple 1).
RING_PROTOCOL_FACTOR: Final = (0.5, 0.92, 1.0)
# LL bus-bandwidth ceiling (GB/s), llMaxBws: single node by architecture; multi-node rows
# reachable on x86 are 39 (2 nodes) and 20.4 (more) (cost-model.md §1.4).
LL_MAX_ONE_NODE_GB_PER_S: Final = {"ampere": 87.7, "hopper": 141.0, "blackwell": 282.0, "tpu": 1e9}
LL_MAX_TWO_NODES_GB_PER_S: Final = 39.0
LL_MAX_MANY_NODES_GB_PER_S: Final = 20.4
# Tree bandwidth: Simple 0.92·busBw; LL busBw/3.8; LL128 ×7/9 on one node, ×120/128 otherwise.
TREE_SIMPLE_FACTOR: Final = 0.92
TREE_LL_DIVISOR: Final = 3.8
# PAT (RS/AG, one rank per node): ×0.75 of the ring bandwidth (tuning.cc).
PAT_FACTOR: Final = 0.75


def protocols(shape: GroupShape, profile: FabricProfile) -> tuple[int, ...]:
    """Protocols NCCL enables by default: LL128 only on SM90+ or on NVLink-only paths
    (tuning.cc enable rules), so an Ampere group that crosses the network has LL and Simple."""
    if profile.arch == "ampere" and shape.multi_domain:
        return (LL, SIMPLE)
    return (LL, LL128, SIMPLE)


def nvlink_scale(profile: FabricProfile) -> float:
    return profile.nvlink_hop_latency_us / NCCL_NVLINK_HOP_US


def net_scale(profile: FabricProfile) -> float:
    return profile.net_hop_latency_us / NCCL_NET_HOP_US


def spine_extra_us(shape: GroupShape, profile: FabricProfile) -> float:
    """Extra switch traversals per network step: leaf→spine→leaf, and the core beyond it."""
    if not shape.crosses_spine:
        return 0.0
    hops = 4 if shape.crosses_core else 2
    return hops * profile.switch_hop_latency_us


def ll_cap_gb_per_s(shape: GroupShape, profile: FabricProfile) -> float:
    if shape.nodes <= 1:
        return LL_MAX_ONE_NODE_GB_PER_S.get(profile.arch, 141.0)
    return LL_MAX_TWO_NODES_GB_PER_S if shape.nodes == 2 else LL_MAX_MANY_NODES_GB_PER_S


def scaleout_gb_per_s(
    shape: GroupShape, profile: FabricProfile, load: float, *, channels: bool = True
) -> tuple[float, str]:
    """Bus bandwidth of the inter-domain tier for this group, and the tier that limits it.
    ``channels``: ring/tree traffic leaves a domain through one NIC per NCCL channel, so the
    profile's per-domain NIC bound applies; p2p-based all-to-all uses every rank's own NIC."""
    nics: float = shape.min_nics_per_domain
    if channels and profile.max_collective_nics_per_domain:
        nics = min(nics, profile.max_collective_nics_per_domain)
    nic = nics * profile.nic_gb_per_s / load
    if not shape.crosses_spine:
        return nic, "nic"
    over = profile.leaf_oversubscription
    if shape.crosses_core:
        over = max(over, profile.spine_oversubscription)
    if over > 1.0:
        return nic / over, "spine"
    return nic, "nic"


def ring_gb_per_s(shape: GroupShape, profile: FabricProfile, load: float) -> tuple[float, str]:
    """Ring bus bandwidth: NVLink inside one domain, else min(NIC egress, NVLink chain)."""
    nvlink = profile.nvlink_ring_gb_per_s
    if not shape.multi_domain:
        return nvlink, "nvlink"
    out, tier = scaleout_gb_per_s(shape, profile, load)
    m = shape.max_per_domain
    if m > 1 and nvlink * m / (m - 1) < out:
        return nvlink * m / (m - 1), "nvlink"
    return out, tier


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
    one_nic_gb_per_s: float  # a single NIC path (send-recv)
    ring_gb_per_s: float
    ring_tier: str
    spine_us: float  # extra switch latency per network step
    ll_cap_gb_per_s: float
    nvlink_scale: float
    net_scale: float
    protocols: tuple[int, ...]


def tiers(shape: GroupShape, profile: FabricProfile, load: float) -> Tiers:
    multi = shape.multi_domain
    out, out_tier = scaleout_gb_per_s(shape, profile, load) if multi else (0.0, "nvlink")
    p2p, p2p_tier = (
        scaleout_gb_per_s(shape, profile, load, channels=False) if multi else (0.0, "nvlink")
    )
    one = p2p / shape.min_nics_per_domain if multi else profile.nvlink_ring_gb_per_s
    ring, ring_tier = ring_gb_per_s(shape, profile, load)
    return Tiers(
        out_gb_per_s=out,
        out_tier=out_tier,
        p2p_out_gb_per_s=p2p,
        p2p_tier=p2p_tier,
        one_nic_gb_per_s=one,
        ring_gb_per_s=ring,
        ring_tier=ring_tier,
        spine_us=spine_extra_us(shape, profile),
        ll_cap_gb_per_s=ll_cap_gb_per_s(shape, profile),
        nvlink_scale=nvlink_scale(profile),
        net_scale=net_scale(profile),
        protocols=protocols(shape, profile),
    )


def ring_latency_us(
    multi_domain: bool, t: Tiers, steps: int, inter_steps: int, proto: int
) -> float:
    """NCCL ring latency: base + intra steps × NVLink hop + inter steps × (NET hop + switches)."""
    intra = NVLINK_US["ring"][proto] * t.nvlink_scale
    if multi_domain:
        intra = max(intra, NET_OVERHEAD_US[proto])
    inter = NET_US["ring"][proto] * t.net_scale + t.spine_us
    return BASE_US["ring"][proto] + (steps - inter_steps) * intra + inter_steps * inter
