"""NCCL's point-to-point transfers (send/recv, the per-peer ops of all-to-all): how many
channels an op runs on, in which protocol, and how its chunk pipeline fills (pure).

Theory of operation
-------------------
A p2p op is not a collective: NCCL gives each peer its own channels. Across nodes a peer gets
the channels its NIC rate needs, fewer as the communicator grows so that a batch of peers fits
the p2p channels (``graph/paths.cc``). Inside a node an op is split over channels by its size,
each moving one NVLink's worth through a FIFO of 512 KiB chunks (``enqueue.cc``
``addP2pToPlan``). The constants below are NCCL 2.30.7's (@5067397c).
"""

from __future__ import annotations

import math
from typing import Final

from fabricfit.cost.nccl import LL, NODE_CHANNELS, SIMPLE, collective_channels, pow2_up
from fabricfit.cost.shape import GroupShape
from fabricfit.fabric.profiles import FabricProfile

# p2p channels per network peer (graph/paths.cc @5067397c): max(local NICs, ⌈NIC GB/s ÷ 14⌉)
# (NCCL_P2P_PER_CHANNEL_NET_BW = 14 GB/s), a power of two; across nodes halved while channels ×
# ⌈ranks ÷ 8⌉ (NCCL_MAX_DEV_WORK_P2P_PER_BATCH peers per batch) exceed the p2p channels, which
# are the communicator's channels rounded up to a power of two.
P2P_CHANNEL_NET_GB_PER_S: Final = 14.0
P2P_PEERS_PER_BATCH: Final = 8
# p2p inside one node (send/recv, all-to-all): a peer op is split over channels (one CTA each)
# by size (enqueue.cc addP2pToPlan @5067397c, 908-921): parts of at least chunk/8 and at most
# 32 chunks (chunk = NCCL_P2P_NVL_CHUNKSIZE, 512 KiB, init.cc:820), starting from the channels
# one op may take when every peer runs at once (scheduleP2pTasksToPlan, 1143-1146: the per-peer
# channels halved while × ranks exceed the p2p channels) and doubling up to the per-peer channels.
# p2p channels: the node's collective channels rounded up to a power of two (paths.cc:989-990):
# 24 → 32 on 8-GPU A100 and H100 nodes; per peer 2 per NVLink (paths.cc:930-937, 18 or 12
# links) capped at those 32 (paths.cc:1003).
P2P_NVL_CHUNK_BYTES: Final = 512 << 10
P2P_NVL_CHANNELS: Final = pow2_up(NODE_CHANNELS)
P2P_LL_THRESHOLD_BYTES: Final = 16 << 10
# What one p2p channel moves over NVLink: NCCL's bandwidth of one NVLink (topo.h SM80/SM90/SM100
# _NVLINK_BW), ~20 GB/s of 128-byte SM payloads on a 25 GB/s link (sjeaugey, nccl-tests#149).
P2P_CHANNEL_NVLINK_GB_PER_S: Final = {"ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}


def p2p_channels_per_peer(shape: GroupShape, profile: FabricProfile, nics: float) -> int:
    """Channels NCCL gives one network peer of a send/recv (graph/paths.cc): fewer as the
    communicator grows, so that every peer of a batch of 8 fits in the p2p channels."""
    line = profile.nic_gbit_per_s / 8
    per_peer = pow2_up(max(1, math.ceil(line / P2P_CHANNEL_NET_GB_PER_S)))
    p2p = pow2_up(collective_channels(nics, profile))
    batches = -(-shape.ranks // P2P_PEERS_PER_BATCH)
    while per_peer * batches > p2p and per_peer > 1:
        per_peer //= 2
    return per_peer


def p2p_nvlink_channels(size: int, ranks: int) -> int:
    """Channels one p2p op of ``size`` bytes runs on inside one node (enqueue.cc addP2pToPlan):
    the op's share of the p2p channels when all ``ranks`` peers run at once, doubled while a part
    would exceed 32 chunks (16 MiB), at most the per-peer channels."""
    most = P2P_NVL_CHANNELS
    least = most
    while least * ranks > P2P_NVL_CHANNELS and least > 1:
        least //= 2
    min_part, max_part = P2P_NVL_CHUNK_BYTES // 8, 32 * P2P_NVL_CHUNK_BYTES
    channels = max(1, min(least, -(-size // min_part)))
    part = max(min_part, -(-size // channels))
    while part > max_part and channels <= most // 2:
        channels *= 2
        part = -(-size // channels)
    return channels


def p2p_protocol(size: int, channels: int) -> int:
    """A p2p op runs LL up to 16 KiB per channel (NCCL_P2P_LL_THRESHOLD), else Simple; p2p has
    no LL128 (enqueue.cc:932-933)."""
    return LL if size <= channels * P2P_LL_THRESHOLD_BYTES else SIMPLE


def p2p_nvlink_fill(size: int, channels: int, profile: FabricProfile) -> float:
    """Time factor of an intra-node p2p op: each channel moves its part in 512 KiB chunks through
    the peer's FIFO (NCCL_STEPS slots), the sender copying in while the receiver copies out, so
    L chunks take L + d chunk times (d = ``p2p_fill_chunks``)."""
    chunks = max(size / channels / P2P_NVL_CHUNK_BYTES, 1.0)
    return 1.0 + profile.p2p_fill_chunks / chunks


def p2p_peer_gb_per_s(shape: GroupShape, profile: FabricProfile, nics: float) -> float:
    """What one network peer's p2p channels carry: channels × 14 GB/s × NIC efficiency."""
    per_peer = p2p_channels_per_peer(shape, profile, nics)
    return per_peer * P2P_CHANNEL_NET_GB_PER_S * profile.nic_efficiency
