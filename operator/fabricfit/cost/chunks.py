"""How NCCL cuts a call into chunks and loops (pure): the inputs of the pipeline-fill terms.

A collective runs as loops of ``channels × heads × chunk`` bytes (NVLS, NVLS-tree) or
``channels × chunk`` (tree); NCCL shrinks the chunk for small calls (enqueue.cc) and tunes
NVLS-tree's channels and largest chunk per platform (nvls.cc). The cost model charges a fill of
a few loops per pipeline stage (:mod:`fabricfit.cost.algorithms`), so these sizes set how far
below its plateau a mid-size call runs.
"""

from __future__ import annotations

from typing import Final

from fabricfit.cost import nccl, p2p
from fabricfit.cost.nccl import LL, LL128, SIMPLE, log2_floor
from fabricfit.cost.shape import GroupShape
from fabricfit.fabric.profiles import FabricProfile

# NVLS work split (enqueue.cc): channels × heads concurrent ops, heads ≤ 32 (NCCL_MAX_NVLS_ARITY);
# channels 16 on Hopper, 24 on a Blackwell NVLink domain, 32 across Blackwell domains (nvls.cc).
NVLS_MAX_HEADS: Final = 32
NVLS_CHUNK_BYTES: Final = 128 << 10
NVLS_CHUNK_STEPS: Final = (64, 8, 2)  # halve the chunk while bytes < k × ops × chunk
# NVLS-tree (enqueue.cc): the chunk drops to 256/128/64/32 KiB below 32/16/4/1 × ops × chunk.
NVLS_TREE_SHRINK: Final = ((32, 256 << 10), (16, 128 << 10), (4, 64 << 10), (1, 32 << 10))
# Tree chunks (enqueue.cc): one step of the protocol's buffer (NCCL_STEPS = 8) — LL128 120
# elements × 640 threads × 8 steps × 8 B with 15/16 of each line data, LL 512 KiB / 2; Simple's
# buffer is NCCL_BUFFSIZE (the profile's nccl_buffsize, 4 MiB by default).
NCCL_STEPS: Final = 8
TREE_CHUNK_BYTES: Final = {LL: 32 << 10, LL128: 576_000}
# Tree LL128 halves its chunk while bytes / (channels·chunk) < steps·k / ppn, with
# steps = 1 + log2(nodes) + 0.1·ppn (enqueue.cc), down to 128 KiB (k = 64), then 32 KiB (k = 16).
TREE_LL128_SHRINK: Final = ((64, 128 << 10), (16, 32 << 10))
# A small ring or tree call runs on fewer channels than the communicator has (enqueue.cc
# topoGetAlgoInfo @5067397c, 2093-2096): one fewer while its bytes are under channels × threads ×
# the protocol's bytes per thread — 8 for LL and LL128, 64 for Simple (comm.h), ring LL's × ranks
# (tuning.cc:593) — with 512 threads per channel for LL and Simple, 640 for LL128 (device.h; 256
# for Simple only on PCIe-bound nodes, tuning.cc:244-245). PAT has no thread count in that
# table (tuning.cc sets none), so it keeps every channel.
CHANNEL_THREADS: Final = (512, 640, 512)
THREAD_THRESHOLD_BYTES: Final = (8, 8, 64)


def nvls_channels(profile: FabricProfile) -> int:
    """NVLS channels inside one NVLink domain: 24 on Blackwell, 16 before (nvls.cc)."""
    return 24 if profile.arch == "blackwell" else 16


def nvls_loop_bytes(size: int, channels: int, heads: int) -> int:
    """Bytes NVLS moves per loop (channels × heads × chunk), after NCCL's chunk shrinking."""
    ops = channels * heads
    chunk = NVLS_CHUNK_BYTES
    for k in NVLS_CHUNK_STEPS:
        if size < k * ops * chunk:
            chunk //= 2
    return ops * chunk


def nvls_tree_tuning(shape: GroupShape, profile: FabricProfile) -> tuple[int, int]:
    """NVLS-tree channels and largest chunk (nvls.cc ncclNvlsTuning @5067397c): 128 KiB chunks,
    at most 64 KiB from 4 domains on; Blackwell across domains tuned by domain count, ranks per
    domain and NIC rate (ncclNvlsTreeSm100Tuning). Its NIC-path test is read as: NIC and GPU
    share a PCIe switch on 8-GPU nodes, not on Grace trays of a multi-node NVLink domain."""
    chunk, domains = NVLS_CHUNK_BYTES, shape.domains
    if profile.arch != "blackwell":
        return 16, (64 << 10) if domains >= 4 else chunk
    ppn, nic = shape.min_per_domain, profile.nic_gbit_per_s / 8
    pxb = profile.gpus_per_nvlink_domain <= profile.gpus_per_node
    if domains == 2 and nic >= 48:
        if ppn <= 4:
            return 32, 256 << 10
        return 32, (64 << 10) if ppn >= 16 or (ppn <= 8 and pxb and nic < 96) else chunk
    if nic >= 96:
        if ppn <= 8:
            return 24, 256 << 10
        return 32, chunk if ppn < 32 else 64 << 10
    if nic >= 48:
        return 24, (64 << 10) if pxb else chunk
    return 32, (64 << 10) if domains >= 4 else chunk


def nvls_tree_loop_bytes(size: int, channels: int, heads: int, chunk: int) -> int:
    """Bytes NVLS-tree moves per loop, after NCCL's NVLS-tree chunk shrinking."""
    ops = channels * heads
    for k, smaller in NVLS_TREE_SHRINK:
        if size < k * ops * chunk and chunk > smaller:
            chunk = smaller
    return ops * chunk


def tree_stages(shape: GroupShape) -> float:
    """Pipeline stages of NCCL's tree in one direction, weighted as NCCL weighs them when it
    sizes tree chunks (enqueue.cc: 1 + log2(nodes) + 0.1·ppn, the 1 being the call itself):
    one per binary-tree level between domains, a tenth per rank chained inside a domain."""
    return float(log2_floor(shape.domains)) + 0.1 * shape.max_per_domain


def tree_loop_bytes(
    size: int, shape: GroupShape, channels: float, proto: int, buffsize: int
) -> float:
    """Bytes the tree moves per loop: channels × chunk, LL128 chunks shrunk as NCCL does; a
    Simple chunk is one step, an eighth of the Simple buffer (``buffsize``, NCCL_BUFFSIZE:
    enqueue.cc stepSize = buffSizes[proto] / NCCL_STEPS, chunkSteps 1 for the tree)."""
    chunk = buffsize // NCCL_STEPS if proto == SIMPLE else TREE_CHUNK_BYTES[proto]
    ch = max(channels, 1.0)
    if proto == LL128:
        ppn = shape.max_per_domain
        steps = 1 + tree_stages(shape)
        for k, floor in TREE_LL128_SHRINK:
            while size / (ch * chunk) < steps * k / ppn and chunk > floor:
                chunk //= 2
    return ch * chunk


def call_channels(
    algorithm: str, protocol: str, size: int, shape: GroupShape, profile: FabricProfile
) -> int:
    """Channels NCCL runs one call on: NVLS and NVLS-tree their own; a p2p op (send-recv, an
    all-to-all's per-peer op) those a peer gets for its size; ring and tree the communicator's,
    fewer for small calls (``CHANNEL_THREADS``), PAT all of them; none on a TPU torus."""
    if algorithm == "torus":
        return 0
    if algorithm == "nvls":
        return nvls_channels(profile)
    if algorithm == "nvls-tree":
        return nvls_tree_tuning(shape, profile)[0]
    nics = nccl.channel_nics(shape, profile)
    if algorithm in ("p2p", "pairwise"):
        if shape.multi_domain:
            return p2p.p2p_channels_per_peer(shape, profile, nics)
        peer = size if algorithm == "p2p" else -(-size // shape.ranks)
        return p2p.p2p_nvlink_channels(peer, shape.ranks)
    channels = nccl.collective_channels(nics, profile) if shape.multi_domain else nccl.NODE_CHANNELS
    if algorithm == "pat":
        return channels
    proto = nccl.PROTOCOLS.index(protocol)
    per_thread = THREAD_THRESHOLD_BYTES[proto]
    if algorithm == "ring" and proto == LL:
        per_thread *= shape.ranks
    return max(1, min(channels, size // (CHANNEL_THREADS[proto] * per_thread)))
