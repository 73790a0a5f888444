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


def fittable_fields(profile: FabricProfile) -> tuple[str, ...]:
    """Fields :func:`fit_profile` may change on this profile (NVLS ones only with NVLS)."""
    if profile.torus is not None:
        return ()
    nvls_only = (
        "nvls_efficiency",
        "nvls_latency_us",
        "pipeline_fill_loops",
        "nvls_tree_efficiency",
        "nvls_tree_stage_fill_loops",
    )
    return tuple(f for f in FITTABLE if profile.nvls or f not in nvls_only)


def steps(name: str, value: float) -> list[float]:
    """The values one step from ``value`` either way (×/÷ LOG_STEP, or ± LINEAR_STEP of the
    field's range, within its bounds), without ``value`` itself."""
    spec = FITTABLE[name]
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
        spec = FITTABLE[name]
        if spec.log_space and value > 0 and start > 0:
            total += math.log(value / start) ** 2
        else:
            total += ((value - start) / ((spec.high - spec.low) / 4)) ** 2
    return PRIOR_WEIGHT * total
