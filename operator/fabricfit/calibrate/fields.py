"""The fields a fit may change: their bounds, which rows can determine them, how far a step
moves them when their sensitivity is probed, and the weak prior on the base's values (pure).

Efficiencies and pipeline fills are bandwidth fields: only a row above
:data:`LATENCY_MAX_BYTES` determines them (on a latency row a fill or an efficiency scales a
transfer of a few KiB, an artefact of the model, not the physics it names). Latencies and the
launch floor may be determined by any row.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.cost.shape import GroupShape
from fabricfit.fabric.profiles import FabricProfile


@dataclass(frozen=True)
class Field:
    """A fittable field: physical bounds (the base value is the start), whether it is searched in
    log space, and whether only bandwidth rows (> LATENCY_MAX_BYTES) can determine it."""

    low: float
    high: float
    log_space: bool
    bandwidth: bool


# Searched in this order: the launch floor of -g G runs first (per GPU, then per channel), so
# that a per-call latency does not absorb a host-side floor it cannot describe (coordinate
# descent keeps the first fit); the
# per-call latency across NICs before the one inside a domain, so that rows from several nodes
# only (a cloud fabric's 2-node curve) move the network's latency, not the NVLink domain's.
FITTABLE: dict[str, Field] = {
    "launch_us_per_gpu": Field(0.0, 50.0, False, False),
    "launch_us_per_channel": Field(0.0, 2.0, False, False),
    "nvlink_efficiency": Field(0.3, 1.0, True, True),
    "nvls_efficiency": Field(0.2, 1.0, True, True),
    "nic_efficiency": Field(0.3, 1.0, True, True),
    "net_base_latency_us": Field(0.0, 200.0, False, False),
    "base_latency_us": Field(0.5, 100.0, True, False),
    "nvlink_hop_latency_us": Field(0.02, 20.0, True, False),
    "net_hop_latency_us": Field(0.1, 100.0, True, False),
    "nvls_latency_us": Field(1.0, 200.0, True, False),
    "pipeline_fill_loops": Field(0.0, 40.0, False, True),
    "nvls_tree_efficiency": Field(0.3, 1.0, True, True),
    "stage_fill_loops": Field(0.0, 8.0, False, True),
    "nvls_tree_stage_fill_loops": Field(0.0, 8.0, False, True),
    "alltoall_efficiency": Field(0.1, 1.0, True, True),
    "alltoall_decay": Field(0.0, 2.0, False, True),
    "p2p_fill_chunks": Field(0.0, 8.0, False, True),
}
# How a cluster's bandwidth and latency change with scale beyond what the model's structure gives
# (ring steps linear in ranks, tree levels in log2 of the domains, NCCL's per-node-count caps):
# the decay of scale-out bandwidth with the domains spanned, and the cost of leaving a rail group
# (the spine's switch hops per network step, its taper). Fitted only by ``fabricfit calibrate``
# (``fit_profile(scale=True)``), on rows that separate them from the flat fields
# (:func:`scale_precondition`); never into a preset, whose numbers must be derived, not tuned.
SCALE_FITTABLE: dict[str, Field] = {
    "scaleout_decay": Field(0.0, 2.0, False, True),
    "switch_hop_latency_us": Field(0.0, 20.0, False, False),
    "leaf_oversubscription": Field(1.0, 8.0, True, True),
}
ALL_FIELDS: dict[str, Field] = {**FITTABLE, **SCALE_FITTABLE}
# Rows of at most this many bytes per rank are latency rows (the accuracy report's bands too).
LATENCY_MAX_BYTES = 64 * 1024
# A field is constrained when one step (×/÷ LOG_STEP, or ± LINEAR_STEP of its range) moves some
# row that can determine it by at least SENSITIVITY_MIN (|log| of the time ratio): a field that
# moves no row by 1 % for a 10 % change would need to double to move one by the rows' noise.
LOG_STEP, LINEAR_STEP, SENSITIVITY_MIN = 1.1, 0.05, 0.01
# The prior on the base: each field pays PRIOR_WEIGHT × (log of its change)² (linear fields:
# change / a quarter of their range).
PRIOR_WEIGHT = 0.01
UNCONSTRAINED = "no row constrains it"


def fittable_fields(profile: FabricProfile, *, scale: bool = False) -> tuple[str, ...]:
    """Fields :func:`fit_profile` may change on this profile (NVLS ones only with NVLS; the
    scale terms of :data:`SCALE_FITTABLE` only with ``scale``)."""
    if profile.torus is not None:
        return ()
    nvls_only = (
        "nvls_efficiency",
        "nvls_latency_us",
        "pipeline_fill_loops",
        "nvls_tree_efficiency",
        "nvls_tree_stage_fill_loops",
    )
    names = (*FITTABLE, *(SCALE_FITTABLE if scale else ()))
    return tuple(f for f in names if profile.nvls or f not in nvls_only)


def scale_precondition(name: str, shapes: Sequence[tuple[int, GroupShape]]) -> str | None:
    """Why the rows (``(bytes per rank, shape)``) cannot separate scale term ``name`` from the
    flat fields, or None when they can: the decay needs bandwidth rows at two or more domain
    counts, one beyond two (with one count it is a second NIC efficiency); the rail-group terms
    need multi-domain rows inside one rail group and rows across rail groups."""
    multi = [(size, s) for size, s in shapes if s.multi_domain]
    if name == "scaleout_decay":
        counts = {s.domains for size, s in multi if size > LATENCY_MAX_BYTES}
        if len(counts) < 2 or max(counts) <= 2:
            return "needs bandwidth rows at two or more domain counts, one beyond 2 domains"
        return None
    across = {s.crosses_spine for _, s in multi}
    if True not in across:
        return "no row crosses a rail group"
    if False not in across:
        return "needs rows inside one rail group too"
    return None


def steps(name: str, value: float) -> list[float]:
    """The values one step from ``value`` either way (×/÷ LOG_STEP, or ± LINEAR_STEP of the
    field's range, within its bounds), without ``value`` itself."""
    spec = ALL_FIELDS[name]
    if spec.log_space and value > 0:
        return [value * LOG_STEP, value / LOG_STEP]
    width = LINEAR_STEP * (spec.high - spec.low)
    found = [min(value + width, max(spec.high, value)), max(value - width, min(spec.low, value))]
    return [v for v in found if v != value]


def prior_penalty(profile: FabricProfile, base: FabricProfile, names: Sequence[str]) -> float:
    """PRIOR_WEIGHT × the squared log change of each of ``names`` from ``base``."""
    total = 0.0
    for name in names:
        value, start = float(getattr(profile, name)), float(getattr(base, name))
        if value == start:
            continue
        spec = ALL_FIELDS[name]
        if spec.log_space and value > 0 and start > 0:
            total += math.log(value / start) ** 2
        else:
            total += ((value - start) / ((spec.high - spec.low) / 4)) ** 2
    return PRIOR_WEIGHT * total
