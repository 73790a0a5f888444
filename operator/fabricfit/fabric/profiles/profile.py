"""The fabric profile as frozen data: the hardware numbers the cost model runs on.

Theory of operation
-------------------
A profile describes one hardware class end to end, from the GPU's NVLink ports out to the spine:

* scale-up: per-GPU NVLink line rate (GB/s per direction), the fraction NCCL's ring reaches
  (``nvlink_efficiency``), whether NVSwitch can reduce in-switch (NVLS) and how efficiently,
  GPUs per node and per NVLink domain (8 for an HGX node, 72 for a GB200 NVL72 rack);
* scale-out: NICs per node, line rate (Gbit/s) and the fraction a p2p/ring stream reaches,
  oversubscription above the leaf (traffic leaving a rail group or changing rails) and above the
  spine (traffic crossing spine blocks), per-hop switch latency;
* TPU: torus shape of the pod, one-way ICI bandwidth per link, the wraparound rule, OCS, DCN;
* optional ``max_collective_nics_per_domain``: how many NICs one NCCL collective actually drives
  out of a large NVLink domain (channels map to NICs; binds on GB200 NVL72, not on 8-GPU nodes);
* optional wall-time latencies fitted per tier (``base_latency_us`` per call inside a domain,
  ``net_base_latency_us`` added when the call crosses NICs, ``nvls_latency_us`` for NVLink SHARP)
  next to the per-step hop latencies, the pipeline-fill depth of NVLS (``pipeline_fill_loops``)
  and of each tree stage between domains (``stage_fill_loops``; NVLS-tree's stages have their
  own, ``nvls_tree_stage_fill_loops``, which a profile file that omits it takes from
  ``stage_fill_loops``), the share of NVLS bandwidth NVLS-tree's NVLink stage keeps
  (``nvls_tree_efficiency``), the efficiency of p2p across NICs (send-recv; all-to-all at two
  domains) and the decay of all-to-all's with domain count (``alltoall_efficiency``,
  ``alltoall_decay``), the fill of an intra-node p2p channel's chunk pipeline
  (``p2p_fill_chunks``), and the host's launch time per GPU and per channel of the call
  (``launch_us_per_gpu``, ``launch_us_per_channel``, only for reading nccl-tests runs where one
  thread drives several GPUs), and the decay of scale-out bandwidth with the domains a group
  spans (``scaleout_decay``, 0 on every preset; fitted by ``fabricfit calibrate`` on a
  cluster's runs at several node counts). Their defaults are NCCL's own
  constants or neutral values, so a profile written before they existed still loads and means
  the same;
* optional NCCL set-up of the platform (``nccl_algorithms``, ``nccl_protocols``,
  ``nvls_enabled``, ``pxn_enabled``): what its documented NCCL environment lets NCCL run
  (``NCCL_ALGO``, ``NCCL_PROTO``, ``NCCL_NVLS_ENABLE``, ``NCCL_PXN_DISABLE`` /
  ``NCCL_P2P_PXN_LEVEL``). Unset, NCCL considers everything it would by default;
  set, the model masks NCCL's choices as NCCL masks its tuner's table (tuning.cc). Next to it
  ``net_plugin_latency_us``, the latency the platform's network plugin reports to NCCL, which
  NCCL's tuner adds to every network step when it chooses (0, NCCL's own transports' value),
  ``nccl_buffsize`` (``NCCL_BUFFSIZE``: the Simple buffer, whose eighth is a tree chunk) and
  ``nccl_version``, the NCCL release it runs (its tuner's constants choose, not 2.30.7's; before
  2.19 a Simple step across NICs also waits for the GPUDirect flush on every GPU);
* optional ``nic_ports_per_rail``: NIC ports behind each rail (1; 2 on OCI's A100 machines,
  16 ports of 100 Gb/s for 8 GPUs), which NCCL's tuner sees as NICs of their own;
* optional ``spare_nodes_per_nvlink_domain``: an operating policy rather than a hardware number,
  the nodes (trays) of every multi-node NVLink domain the planner keeps free as spares for
  failover and maintenance (``placement.spares``; a TrainingTopology may override it). 0, the
  default, keeps none; it must stay below the nodes a domain holds;
* optional ``gpu_peak_tflops`` (dense BF16 per GPU) and ``mfu``: how long a step computes, so
  how much of it a job's traffic occupies the links it shares (:mod:`fabricfit.contention`),
  and ``nic_sharing_efficiency`` / ``fabric_sharing_efficiency``: the share of a saturated NIC
  port or switch-to-switch link that competing flows get together (fitted on published
  measurements of jobs sharing links; ``docs/concepts/contention.md``).

Profiles are hashable and compare by value, so the cost model can cache on them; the hash is
computed once because the placement search hashes the same profile millions of times.

Reading and validating profile documents, and the presets, are :mod:`fabricfit.fabric.profiles`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

DEFAULT_BUFFSIZE = 1 << 22  # NCCL's Simple buffer when NCCL_BUFFSIZE is not set (init.cc:813)
# GPUs under one set of rail leaves: a DGX SuperPOD scalable unit, 32 nodes x 8 GPUs under 8
# rail leaves (scaling-book gpus.md); traffic between rail groups climbs to the spine.
RAIL_GROUP_GPUS = 256
# Fitted sharing efficiencies (see FabricProfile; a unit test re-fits them from the fixture).
NIC_SHARING_EFFICIENCY = 0.98
FABRIC_SHARING_EFFICIENCY = 0.896


class ProfileError(ValueError):
    """A fabric profile name or document is invalid (one-line message)."""


@dataclass(frozen=True)
class TorusSpec:
    """A TPU pod's inter-chip interconnect (scaling-book tpus.md; Cloud TPU docs)."""

    dims: tuple[int, ...]  # pod shape, e.g. (16, 16, 16) for v4
    ici_link_gb_per_s: float  # one-way bandwidth of one ICI link
    ici_efficiency: float  # fraction of line rate a collective reaches
    ici_hop_latency_us: float  # T_min per hop (~1 µs, scaling-book sharding.md)
    wrap_rule: (
        str  # "cube": wrap iff every axis is a multiple of cube_edge; "axis": axis == pod dim
    )
    cube_edge: int  # OCS reconfiguration unit edge (4 for 4x4x4 cubes)
    ocs: bool  # optical circuit switches join cubes (v4, v5p)
    dcn_gb_per_s_per_host: float  # data-centre network between slices
    chips_per_host: int


@dataclass(frozen=True)
class FabricProfile:
    """One hardware class. Bandwidths are per direction, GB = 1e9 bytes."""

    name: str
    arch: str  # selects NCCL's per-architecture tables (ampere | hopper | blackwell | tpu)
    gpus_per_node: int
    gpus_per_nvlink_domain: int
    nvlink_gb_per_s: float  # per-GPU NVLink line rate, one direction
    nvlink_efficiency: float  # ring busbw / line rate
    nvls: bool  # NVSwitch in-switch reduction (NVLink SHARP)
    nvls_efficiency: float  # NVLS all-reduce algbw = line * eff * n/(n+1)
    nics_per_node: int
    nic_gbit_per_s: float
    nic_efficiency: float  # p2p/ring stream / line rate
    leaf_oversubscription: float  # downlink:uplink at the leaf (rail-group exit)
    spine_oversubscription: float  # downlink:uplink at the spine (block exit)
    nvlink_hop_latency_us: float
    net_hop_latency_us: float
    switch_hop_latency_us: float  # per extra switch traversed (leaf->spine->leaf)
    # NICs one collective drives out of one NVLink domain (NCCL maps each channel to one NIC and
    # bounds the channel count); 0 = every NIC the group owns. Binds only on large domains.
    max_collective_nics_per_domain: float = 0.0
    # NIC ports behind each rail (OCI BM.GPU4.8: 2 x 100 Gb/s per GPU): NCCL sees every port as a
    # NIC of nic_gbit_per_s / ports and runs a channel on each, so its tuner's per-channel caps
    # bind later; the rail's rate is unchanged. 1 = one NIC per rail.
    nic_ports_per_rail: int = 1
    # Wall-time latency per call (µs) inside one NVLink domain; NCCL's ring LL base by default.
    base_latency_us: float = 6.6
    # Extra wall time per call once the call crosses NICs (proxy, PCIe, NIC doorbells).
    net_base_latency_us: float = 0.0
    # NVLS / NVLS-tree per-call latency inside the domain (NCCL's tuner uses 25 µs).
    nvls_latency_us: float = 25.0
    # NVLS pipeline fill: efficiency L/(L + d) with L = bytes / (channels·heads·chunk) loops.
    pipeline_fill_loops: float = 4.0
    # NVLS-tree's NVLink stage: the fraction of standalone NVLS bandwidth it reaches while the
    # same kernel also drives the network sends and receives of the tree (1: as fast as NVLS).
    nvls_tree_efficiency: float = 1.0
    # Tree pipeline fill per stage a chunk crosses between domains (tree levels up and down,
    # and the chain inside the domain), in loops of the call.
    stage_fill_loops: float = 1.0
    # NVLS-tree's fill per tree stage between domains, in loops at the network's rate; a profile
    # file that does not give it takes its stage_fill_loops (what both meant before the split).
    nvls_tree_stage_fill_loops: float = 1.0
    # Host time to launch one GPU's share of a call. Not part of any collective's time (one
    # process per GPU hides it); it bounds runs where one thread drives G GPUs (nccl-tests
    # -g G: back-to-back calls take at least G launches each). 0 = unknown.
    launch_us_per_gpu: float = 0.0
    # What each of those launches also costs per channel the call runs on (NCCL prepares every
    # channel's work on the host; ``chunks.call_channels``).
    launch_us_per_channel: float = 0.0
    # p2p across NICs: fraction of the NIC a send-recv peer and a cross-domain all-to-all at 2
    # domains reach, and the exponent of all-to-all's decay with more (× (2/domains)^decay).
    alltoall_efficiency: float = 1.0
    alltoall_decay: float = 0.0
    # Scale-out bandwidth's decay with the NVLink domains a group spans beyond two: each NIC
    # reaches × (2/domains)^decay (congestion above the leaf, stragglers). 0 on every preset:
    # nothing published derives it; ``fabricfit calibrate`` fits it from a cluster's own runs.
    scaleout_decay: float = 0.0
    # p2p inside a node (send/recv, all-to-all): chunk times to fill the copy-in/copy-out
    # pipeline of each channel's FIFO (one chunk: the receiver waits for the first one).
    p2p_fill_chunks: float = 1.0
    # The platform's NCCL set-up, as NCCL reads NCCL_ALGO / NCCL_PROTO (canonical names, in
    # NCCL's order; None = not set: everything NCCL would consider) and NCCL_NVLS_ENABLE.
    nccl_algorithms: tuple[str, ...] | None = None
    nccl_protocols: tuple[str, ...] | None = None
    nvls_enabled: bool = True
    # PXN (NCCL >= 2.12, on unless NCCL_PXN_DISABLE=1 or NCCL_P2P_PXN_LEVEL=0): a send to a GPU
    # of another node leaves on this node's NIC of the peer's local index, reached over NVLink,
    # so p2p traffic (send/recv, all-to-all) stays on the peer's rail (cost.step).
    pxn_enabled: bool = True
    # The NCCL release the platform runs ("2.26.2"; None: the release whose tables the model
    # follows, 2.30.7): NCCL's tuner constants change between releases, so does its choice.
    nccl_version: str | None = None
    # The latency (µs) the platform's network plugin reports to NCCL (ncclNetProperties_t
    # .latency): NCCL's tuner adds it to every network step, twice for Simple (tuning.cc:389-391),
    # so it steers NCCL's choice of algorithm and protocol; not wall time. 0: NCCL's own IB and
    # socket transports report 0 (net_ib/init.cc:558, net_socket.cc:174).
    net_plugin_latency_us: float = 0.0
    # NCCL_BUFFSIZE: the Simple protocol's buffer per connection (bytes; NCCL's default 4 MiB,
    # init.cc:813). A Simple step is an eighth of it (NCCL_STEPS), and so is a tree chunk, so it
    # sets how many bytes a tree pipeline loop carries and how long the tree takes to fill.
    nccl_buffsize: int = DEFAULT_BUFFSIZE
    # Nodes of each multi-node NVLink domain kept free as spares (placement.spares); policy.
    spare_nodes_per_nvlink_domain: int = 0
    # The compute side of a step, for the duty cycle of a job's traffic (fabricfit.contention):
    # dense BF16 peak per GPU in TFLOP/s (0 = unknown: the job is taken to communicate all the
    # time) and the model FLOPs utilisation training reaches (Llama 3, arXiv:2407.21783 §3.3.2:
    # 38-43 % BF16 MFU on up to 16K H100s).
    gpu_peak_tflops: float = 0.0
    mfu: float = 0.4
    # Link sharing (fabricfit.contention): the fraction of a link's line rate that competing
    # flows get together once they saturate it, on a NIC port and on a switch-to-switch link.
    # Fitted by ``benchmarks/contention_accuracy.py --fit`` on published measurements (rows in
    # tests/fixtures/contention): NIC on gb10 G2+G3, fabric on gb10 G1 + MCCS setting 1.
    nic_sharing_efficiency: float = NIC_SHARING_EFFICIENCY
    fabric_sharing_efficiency: float = FABRIC_SHARING_EFFICIENCY
    torus: TorusSpec | None = None
    description: str = ""
    sources: tuple[str, ...] = ()
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        values = tuple(getattr(self, f.name) for f in fields(self) if f.compare)
        object.__setattr__(self, "_hash", hash(values))

    def __hash__(self) -> int:
        return self._hash

    @property
    def nic_gb_per_s(self) -> float:
        """Effective bytes/s (GB/s) one NIC delivers to a stream."""
        return self.nic_gbit_per_s / 8.0 * self.nic_efficiency

    @property
    def nvlink_ring_gb_per_s(self) -> float:
        """Effective per-GPU NVLink bandwidth a ring reaches (its busbw)."""
        return self.nvlink_gb_per_s * self.nvlink_efficiency

    @property
    def nodes_per_nvlink_domain(self) -> int:
        """Nodes one NVLink domain holds (18 GB200 trays; 1 for an 8-GPU node)."""
        return max(1, self.gpus_per_nvlink_domain // max(1, self.gpus_per_node))

    @property
    def nodes_per_rail_group(self) -> int:
        """Nodes under one set of rail leaves: :data:`RAIL_GROUP_GPUS` rounded up to whole NVLink
        domains (a domain never straddles two rail groups)."""
        domains = max(1, -(-RAIL_GROUP_GPUS // max(1, self.gpus_per_nvlink_domain)))
        return domains * self.nodes_per_nvlink_domain

    @property
    def is_torus(self) -> bool:
        return self.torus is not None
