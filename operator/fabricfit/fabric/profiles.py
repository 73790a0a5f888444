"""Fabric profiles: the hardware numbers the cost model runs on, as frozen data.

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
  (``nvls_tree_efficiency``), the cross-domain all-to-all efficiency and its decay with domain
  count (``alltoall_efficiency``, ``alltoall_decay``), the fill of an intra-node p2p channel's
  chunk pipeline (``p2p_fill_chunks``), and the host's launch time per GPU
  (``launch_us_per_gpu``, only for reading nccl-tests runs where one thread drives several
  GPUs). Their defaults are NCCL's own constants or
  neutral values, so a profile written before they existed still loads and means the same;
* optional NCCL set-up of the platform (``nccl_algorithms``, ``nccl_protocols``,
  ``nvls_enabled``): what its documented NCCL environment lets NCCL run (``NCCL_ALGO``,
  ``NCCL_PROTO``, ``NCCL_NVLS_ENABLE``). Unset, NCCL considers everything it would by default;
  set, the model masks NCCL's choices as NCCL masks its tuner's table (tuning.cc). Next to it
  ``net_plugin_latency_us``, the latency the platform's network plugin reports to NCCL, which
  NCCL's tuner adds to every network step when it chooses (0, NCCL's own transports' value),
  ``nccl_buffsize`` (``NCCL_BUFFSIZE``: the Simple buffer, whose eighth is a tree chunk) and
  ``nccl_version``, the NCCL release it runs (its tuner's constants choose, not 2.30.7's);
* optional ``nic_ports_per_rail``: NIC ports behind each rail (1; 2 on OCI's A100 machines,
  16 ports of 100 Gb/s for 8 GPUs), which NCCL's tuner sees as NICs of their own;
* optional ``spare_nodes_per_nvlink_domain``: an operating policy rather than a hardware number,
  the nodes (trays) of every multi-node NVLink domain the planner keeps free as spares for
  failover and maintenance (``placement.spares``; a TrainingTopology may override it). 0, the
  default, keeps none; it must stay below the nodes a domain holds.

Every number carries its source in the preset YAML files (``presets/*.yaml``: a comment next to
the value and the ``sources`` list); fitted numbers say which measured rows they were fitted on
(``fabricfit.calibrate.fit``, rows in ``tests/fixtures``). Custom
profiles are YAML documents with the same keys; :func:`load_profile` validates them and raises
:class:`ProfileError` (a ``ValueError``) with a one-line message for anything wrong.

Profiles are hashable and compare by value, so the cost model can cache on them; the hash is
computed once because the placement search hashes the same profile millions of times.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from importlib import resources
from types import MappingProxyType
from typing import Any

import yaml

from fabricfit.fabric.ncclsetup import (
    NcclSetupError,
    parse_algorithms,
    parse_protocols,
    parse_version,
)

DEFAULT_PROFILE = "dgx-h100"
DEFAULT_BUFFSIZE = 1 << 22  # NCCL's Simple buffer when NCCL_BUFFSIZE is not set (init.cc:813)
ARCHES = ("ampere", "hopper", "blackwell", "tpu")
WRAP_RULES = ("cube", "axis")


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
    # Cross-domain all-to-all: fraction of every rank's NIC reached at 2 domains, and the
    # exponent of its decay with more domains (efficiency × (2/domains)^decay).
    alltoall_efficiency: float = 1.0
    alltoall_decay: float = 0.0
    # p2p inside a node (send/recv, all-to-all): chunk times to fill the copy-in/copy-out
    # pipeline of each channel's FIFO (one chunk: the receiver waits for the first one).
    p2p_fill_chunks: float = 1.0
    # The platform's NCCL set-up, as NCCL reads NCCL_ALGO / NCCL_PROTO (canonical names, in
    # NCCL's order; None = not set: everything NCCL would consider) and NCCL_NVLS_ENABLE.
    nccl_algorithms: tuple[str, ...] | None = None
    nccl_protocols: tuple[str, ...] | None = None
    nvls_enabled: bool = True
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
    def is_torus(self) -> bool:
        return self.torus is not None


# Optional numeric fields: (low, high) accepted range; absent means the dataclass default.
OPTIONAL_RANGES: Mapping[str, tuple[float, float]] = MappingProxyType(
    {
        "max_collective_nics_per_domain": (0.0, 65_536.0),
        "base_latency_us": (0.0, 10_000.0),
        "net_base_latency_us": (0.0, 10_000.0),
        "nvls_latency_us": (0.0, 10_000.0),
        "pipeline_fill_loops": (0.0, 1_000.0),
        "nvls_tree_efficiency": (0.05, 1.0),
        "stage_fill_loops": (0.0, 1_000.0),
        "nvls_tree_stage_fill_loops": (0.0, 1_000.0),
        "launch_us_per_gpu": (0.0, 1_000.0),
        "alltoall_efficiency": (0.01, 1.0),
        "alltoall_decay": (0.0, 4.0),
        "p2p_fill_chunks": (0.0, 1_000.0),
        "net_plugin_latency_us": (0.0, 10_000.0),
    }
)
# Optional integer fields, as above.
OPTIONAL_INTEGER_RANGES: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "spare_nodes_per_nvlink_domain": (0, 1024),
        "nccl_buffsize": (1 << 16, 1 << 30),
        "nic_ports_per_rail": (1, 16),
    }
)
NCCL_SETUP_FIELDS = ("nccl_algorithms", "nccl_protocols", "nvls_enabled", "nccl_version")
_OPTIONAL = (
    *OPTIONAL_RANGES,
    *OPTIONAL_INTEGER_RANGES,
    *NCCL_SETUP_FIELDS,
    "torus",
    "description",
    "sources",
)
_GPU_REQUIRED = tuple(f.name for f in fields(FabricProfile) if f.name not in (*_OPTIONAL, "_hash"))
_TORUS_KEYS = tuple(f.name for f in fields(TorusSpec))


def _number(doc: Mapping[str, Any], key: str, *, low: float, high: float) -> float:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ProfileError(f"profile field {key!r} must be a number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number) or not low <= number <= high:
        raise ProfileError(f"profile field {key!r} must be within [{low}, {high}], got {value}")
    return number


def _integer(doc: Mapping[str, Any], key: str, *, low: int, high: int) -> int:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProfileError(f"profile field {key!r} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ProfileError(f"profile field {key!r} must be within [{low}, {high}], got {value}")
    return value


def _optional_numbers(doc: Mapping[str, Any]) -> dict[str, float]:
    low_high = OPTIONAL_RANGES.items()
    return {k: _number(doc, k, low=lo, high=hi) for k, (lo, hi) in low_high if k in doc}


def _optional_integers(doc: Mapping[str, Any]) -> dict[str, int]:
    low_high = OPTIONAL_INTEGER_RANGES.items()
    return {k: _integer(doc, k, low=lo, high=hi) for k, (lo, hi) in low_high if k in doc}


def _nccl_setup(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The platform's NCCL set-up ``doc`` gives, validated (absent or null: not set)."""
    found: dict[str, Any] = {}
    try:
        if doc.get("nccl_algorithms") is not None:
            found["nccl_algorithms"] = parse_algorithms(doc["nccl_algorithms"])
        if doc.get("nccl_protocols") is not None:
            found["nccl_protocols"] = parse_protocols(doc["nccl_protocols"])
        if doc.get("nccl_version") is not None:
            found["nccl_version"] = parse_version(doc["nccl_version"])
    except NcclSetupError as err:
        raise ProfileError(str(err)) from None
    if doc.get("nvls_enabled") is not None:
        found["nvls_enabled"] = _flag(doc, "nvls_enabled")
    return found


def _optional(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The optional fields ``doc`` gives, validated (absent: the dataclass default; an absent
    ``nvls_tree_stage_fill_loops`` is the profile's ``stage_fill_loops``, as before the split)."""
    found = {**_optional_numbers(doc), **_optional_integers(doc), **_nccl_setup(doc)}
    if "stage_fill_loops" in found:
        found.setdefault("nvls_tree_stage_fill_loops", found["stage_fill_loops"])
    return found


def _flag(doc: Mapping[str, Any], key: str) -> bool:
    value = doc.get(key)
    if not isinstance(value, bool):
        raise ProfileError(f"profile field {key!r} must be true or false, got {value!r}")
    return value


def _choice(doc: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = doc.get(key)
    if value not in allowed:
        raise ProfileError(
            f"profile field {key!r} must be one of {', '.join(allowed)}, got {value!r}"
        )
    return str(value)


def _parse_torus(doc: Any) -> TorusSpec:
    if not isinstance(doc, Mapping):
        raise ProfileError("profile field 'torus' must be a mapping")
    unknown = sorted(set(doc) - set(_TORUS_KEYS))
    if unknown:
        raise ProfileError(f"unknown torus field {unknown[0]!r}")
    dims = doc.get("dims")
    if (
        not isinstance(dims, list | tuple)
        or not 1 <= len(dims) <= 3
        or not all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 64 for d in dims)
    ):
        raise ProfileError(f"torus field 'dims' must be 1 to 3 integers in [1, 64], got {dims!r}")
    return TorusSpec(
        dims=tuple(int(d) for d in dims),
        ici_link_gb_per_s=_number(doc, "ici_link_gb_per_s", low=0.1, high=10_000),
        ici_efficiency=_number(doc, "ici_efficiency", low=0.05, high=1.0),
        ici_hop_latency_us=_number(doc, "ici_hop_latency_us", low=0.0, high=1_000),
        wrap_rule=_choice(doc, "wrap_rule", WRAP_RULES),
        cube_edge=_integer(doc, "cube_edge", low=1, high=64),
        ocs=_flag(doc, "ocs"),
        dcn_gb_per_s_per_host=_number(doc, "dcn_gb_per_s_per_host", low=0.01, high=100_000),
        chips_per_host=_integer(doc, "chips_per_host", low=1, high=64),
    )


def _parse_sources(doc: Mapping[str, Any]) -> tuple[str, ...]:
    sources = doc.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise ProfileError("profile field 'sources' must be a list of strings")
    return tuple(sources)


def _parse_profile(doc: Any) -> FabricProfile:
    if not isinstance(doc, Mapping):
        raise ProfileError("a fabric profile must be a YAML mapping")
    allowed = {*_GPU_REQUIRED, *_OPTIONAL}
    unknown = sorted(str(k) for k in doc if k not in allowed)
    if unknown:
        raise ProfileError(f"unknown profile field {unknown[0]!r}")
    missing = [k for k in _GPU_REQUIRED if k not in doc]
    if missing:
        raise ProfileError(f"profile is missing field {missing[0]!r}")
    name = doc["name"]
    if not isinstance(name, str) or not name or len(name) > 63:
        raise ProfileError(f"profile field 'name' must be a non-empty string, got {name!r}")
    arch = _choice(doc, "arch", ARCHES)
    torus = _parse_torus(doc["torus"]) if doc.get("torus") is not None else None
    if (arch == "tpu") != (torus is not None):
        raise ProfileError("profile field 'torus' is required exactly when arch is 'tpu'")
    return _build(doc, name, arch, torus)


def _build(doc: Mapping[str, Any], name: str, arch: str, torus: TorusSpec | None) -> FabricProfile:
    description = doc.get("description", "")
    if not isinstance(description, str):
        raise ProfileError("profile field 'description' must be a string")
    profile = FabricProfile(
        name=name,
        arch=arch,
        gpus_per_node=_integer(doc, "gpus_per_node", low=1, high=64),
        gpus_per_nvlink_domain=_integer(doc, "gpus_per_nvlink_domain", low=1, high=65_536),
        nvlink_gb_per_s=_number(doc, "nvlink_gb_per_s", low=0.1, high=100_000),
        nvlink_efficiency=_number(doc, "nvlink_efficiency", low=0.05, high=1.0),
        nvls=_flag(doc, "nvls"),
        nvls_efficiency=_number(doc, "nvls_efficiency", low=0.0, high=1.0),
        nics_per_node=_integer(doc, "nics_per_node", low=1, high=64),
        nic_gbit_per_s=_number(doc, "nic_gbit_per_s", low=1.0, high=100_000),
        nic_efficiency=_number(doc, "nic_efficiency", low=0.05, high=1.0),
        leaf_oversubscription=_number(doc, "leaf_oversubscription", low=1.0, high=1_000),
        spine_oversubscription=_number(doc, "spine_oversubscription", low=1.0, high=1_000),
        nvlink_hop_latency_us=_number(doc, "nvlink_hop_latency_us", low=0.0, high=1_000),
        net_hop_latency_us=_number(doc, "net_hop_latency_us", low=0.0, high=10_000),
        switch_hop_latency_us=_number(doc, "switch_hop_latency_us", low=0.0, high=1_000),
        **_optional(doc),
        torus=torus,
        description=description,
        sources=_parse_sources(doc),
    )
    _check_consistency(profile)
    return profile


def _check_consistency(profile: FabricProfile) -> None:
    if profile.gpus_per_nvlink_domain % profile.gpus_per_node and profile.torus is None:
        raise ProfileError(
            "gpus_per_nvlink_domain must be a multiple of gpus_per_node "
            f"({profile.gpus_per_nvlink_domain} vs {profile.gpus_per_node})"
        )
    nodes_per_domain = profile.gpus_per_nvlink_domain // max(profile.gpus_per_node, 1)
    spares = profile.spare_nodes_per_nvlink_domain
    if spares and (profile.torus is not None or spares >= nodes_per_domain):
        raise ProfileError(
            "spare_nodes_per_nvlink_domain must be below the nodes of one NVLink domain "
            f"({spares} vs {nodes_per_domain}; spares apply to multi-node NVLink domains)"
        )
    nccl_setup = (
        profile.nccl_algorithms,
        profile.nccl_protocols,
        not profile.nvls_enabled,
        profile.net_plugin_latency_us,
        profile.nccl_buffsize != DEFAULT_BUFFSIZE,
        profile.nccl_version,
    )
    if profile.torus is not None and any(nccl_setup):
        raise ProfileError(
            "profile fields nccl_algorithms, nccl_protocols, nvls_enabled, net_plugin_latency_us, "
            "nccl_buffsize and nccl_version describe NCCL; a TPU profile (arch 'tpu') takes none "
            "of them"
        )
    if profile.torus is not None and profile.nic_ports_per_rail != 1:
        raise ProfileError("nic_ports_per_rail describes a GPU node's NICs; a TPU profile has none")
    if profile.nvls and profile.nvls_efficiency <= 0:
        raise ProfileError("nvls_efficiency must be > 0 when nvls is true")
    if profile.torus is not None and math.prod(profile.torus.dims) < profile.gpus_per_node:
        raise ProfileError("torus dims hold fewer chips than one host")


def load_profile(text: str) -> FabricProfile:
    """Parse and validate a custom profile from YAML text; ProfileError on any problem."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        first = str(err).splitlines()[0] if str(err) else "syntax error"
        raise ProfileError(f"profile is not valid YAML: {first}") from None
    except (TypeError, ValueError, AttributeError) as err:  # non-str input, odd encodings
        raise ProfileError(f"profile is not valid YAML: {err}") from None
    return _parse_profile(doc)


def _load_presets() -> Mapping[str, FabricProfile]:
    folder = resources.files("fabricfit.fabric").joinpath("presets")
    found: dict[str, FabricProfile] = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            profile = load_profile(entry.read_text(encoding="utf-8"))
            found[profile.name] = profile
    return MappingProxyType(found)


PRESETS: Mapping[str, FabricProfile] = _load_presets()


def get_profile(name: str) -> FabricProfile:
    """The preset called ``name``; ProfileError naming the presets when it is unknown."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ProfileError(
            f"unknown fabric profile {name!r} (presets: {', '.join(sorted(PRESETS))})"
        ) from None
