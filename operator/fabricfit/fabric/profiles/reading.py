"""Fabric profiles: reading and validating profile documents, and the presets.

What a profile holds is :mod:`~fabricfit.fabric.profiles.profile` (:class:`FabricProfile`,
re-exported here with :class:`TorusSpec` and :class:`ProfileError`). Every number carries its
source in the preset YAML files (``presets/*.yaml``: a comment next to the value and the
``sources`` list); fitted numbers say which measured rows they were fitted on
(``fabricfit.calibrate.fit``, rows in ``tests/fixtures``). Custom profiles are YAML documents
with the same keys; :func:`load_profile` validates them and raises :class:`ProfileError` (a
``ValueError``) with a one-line message for anything wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from importlib import resources
from types import MappingProxyType
from typing import Any

from fabricfit.fabric.documents import DocumentError, load_document
from fabricfit.fabric.names import unknown_name
from fabricfit.fabric.objects import kind_of, shorten
from fabricfit.fabric.profiles.ncclsetup import (
    BUFFSIZE_RANGE,
    NcclSetupError,
    parse_algorithms,
    parse_protocols,
    parse_version,
)
from fabricfit.fabric.profiles.profile import (
    DEFAULT_BUFFSIZE,
    FabricProfile,
    ProfileError,
    TorusSpec,
)

__all__ = [
    "DEFAULT_PROFILE",
    "PRESETS",
    "FabricProfile",
    "ProfileError",
    "TorusSpec",
    "get_profile",
    "load_profile",
]

DEFAULT_PROFILE = "dgx-h100"
ARCHES = ("ampere", "hopper", "blackwell", "tpu")
WRAP_RULES = ("cube", "axis")


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
        "launch_us_per_channel": (0.0, 100.0),
        "alltoall_efficiency": (0.01, 1.0),
        "alltoall_decay": (0.0, 4.0),
        "scaleout_decay": (0.0, 4.0),
        "p2p_fill_chunks": (0.0, 1_000.0),
        "net_plugin_latency_us": (0.0, 10_000.0),
        "gpu_peak_tflops": (0.0, 1_000_000.0),
        "mfu": (0.01, 1.0),
        "nic_sharing_efficiency": (0.05, 1.0),
        "fabric_sharing_efficiency": (0.05, 1.0),
    }
)
# Optional integer fields, as above.
OPTIONAL_INTEGER_RANGES: Mapping[str, tuple[int, int]] = MappingProxyType(
    {
        "spare_nodes_per_nvlink_domain": (0, 1024),
        "nccl_buffsize": BUFFSIZE_RANGE,
        "nic_ports_per_rail": (1, 16),
    }
)
NCCL_SETUP_FIELDS = (
    "nccl_algorithms",
    "nccl_protocols",
    "nvls_enabled",
    "pxn_enabled",
    "nccl_version",
)
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
        raise ProfileError(f"profile field {key!r} must be a number, got {shorten(value)}")
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
        raise ProfileError(f"profile field {key!r} must be an integer, got {shorten(value)}")
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
    for flag in ("nvls_enabled", "pxn_enabled"):
        if doc.get(flag) is not None:
            found[flag] = _flag(doc, flag)
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
        raise ProfileError(f"profile field {key!r} must be true or false, got {shorten(value)}")
    return value


def _choice(doc: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> str:
    value = doc.get(key)
    if value not in allowed:
        raise ProfileError(
            f"profile field {key!r} must be one of {', '.join(allowed)}, got {shorten(value)}"
        )
    return str(value)


def _parse_torus(doc: Any) -> TorusSpec:
    if not isinstance(doc, Mapping):
        raise ProfileError("profile field 'torus' must be a mapping")
    unknown = sorted(str(k) for k in doc if k not in _TORUS_KEYS)
    if unknown:
        raise ProfileError(f"unknown torus field {shorten(unknown[0])}")
    dims = doc.get("dims")
    if (
        not isinstance(dims, list | tuple)
        or not 1 <= len(dims) <= 3
        or not all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= 64 for d in dims)
    ):
        raise ProfileError(
            f"torus field 'dims' must be 1 to 3 integers in [1, 64], got {shorten(dims)}"
        )
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
        raise ProfileError(f"unknown profile field {shorten(unknown[0])}")
    missing = [k for k in _GPU_REQUIRED if k not in doc]
    if missing:
        raise ProfileError(f"profile is missing field {missing[0]!r}")
    name = doc["name"]
    if not isinstance(name, str) or not name or len(name) > 63:
        raise ProfileError(f"profile field 'name' must be a non-empty string, got {shorten(name)}")
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
        not profile.pxn_enabled,
        profile.net_plugin_latency_us,
        profile.nccl_buffsize != DEFAULT_BUFFSIZE,
        profile.nccl_version,
    )
    if profile.torus is not None and any(nccl_setup):
        raise ProfileError(
            "profile fields nccl_algorithms, nccl_protocols, nvls_enabled, pxn_enabled, "
            "net_plugin_latency_us, "
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
    """Parse and validate a custom profile from YAML text; ProfileError on any problem.

    The text goes through the bounded loader every other input takes
    (:func:`fabricfit.fabric.documents.load_document`: alias expansion, integer digits, explicit
    tags and nesting are limited, every failure one line), so a profile file, ``--fabric-dir``
    and the operator's profile ConfigMap cannot make it hang or fill memory."""
    if not isinstance(text, str):
        raise ProfileError(f"profile is not YAML text, got {kind_of(text)}")
    try:
        doc = load_document(text, "the profile")
    except DocumentError as err:
        raise ProfileError(f"profile is not valid YAML: {err}") from None
    return _parse_profile(doc)


def _load_presets() -> Mapping[str, FabricProfile]:
    folder = resources.files("fabricfit.fabric.profiles").joinpath("presets")
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
        presets = sorted(PRESETS)
        raise ProfileError(
            unknown_name("fabric profile", name, presets, f"presets: {', '.join(presets)}")
        ) from None
