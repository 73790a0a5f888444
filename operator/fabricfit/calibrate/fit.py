"""Fit a fabric profile's bandwidths, latencies and efficiencies to measured collectives.

Theory of operation
-------------------
A :class:`Measurement` is one nccl-tests row (collective, per-rank buffer, nodes × GPUs per node,
measured time and busbw, where it came from). :func:`predict` lays the ranks out as nccl-tests
does on the profile's hardware (GPU j of every node on rail j, nodes grouped into the profile's
NVLink domains) and runs the cost model. :func:`fit_profile` then searches the fields listed in
:data:`FITTABLE` to minimise the mean |log(predicted time / measured time)| over the rows — a
relative error that weighs an 8-byte latency row and an 8-GiB bandwidth row alike, and is
robust to a few outliers.

The optimiser is deliberately small and deterministic (no random starts, no dependencies):
coordinate descent over the fields, a few sweeps; per field a coarse grid over its range, in
log space for positive values, then golden-section search around the best grid point. A field
changes only when that lowers the objective, so a field the rows do not constrain (a NIC
efficiency when every row is inside one node) keeps the base profile's value; a weak prior
(:data:`PRIOR_WEIGHT`) keeps barely constrained fields near the base's cited numbers. Fitted values
are rounded to four significant digits, and errors are reported on the rounded profile.

``error`` of a row is the signed relative busbw error ``predicted / measured − 1``, computed from
the times (busbw is size/time times the same factor on both sides, and the time keeps its
precision at sizes where nccl-tests prints a busbw of 0.00).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fabricfit.cost.collectives import Collective, bus_factor, estimate_shape
from fabricfit.cost.shape import GroupShape, summarize_group
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import GpuSlot

# Field → (low, high, log-space search). Bounds are physical; the base value is the start.
# Searched in this order: the launch floor of -g G runs first, so that a per-call latency does
# not absorb a host-side floor it cannot describe (coordinate descent keeps the first fit); the
# per-call latency across NICs before the one inside a domain, so that rows from several nodes
# only (a cloud fabric's 2-node curve) move the network's latency, not the NVLink domain's.
FITTABLE: dict[str, tuple[float, float, bool]] = {
    "launch_us_per_gpu": (0.0, 50.0, False),
    "nvlink_efficiency": (0.3, 1.0, True),
    "nvls_efficiency": (0.2, 1.0, True),
    "nic_efficiency": (0.3, 1.0, True),
    "net_base_latency_us": (0.0, 200.0, False),
    "base_latency_us": (0.5, 100.0, True),
    "nvlink_hop_latency_us": (0.02, 20.0, True),
    "net_hop_latency_us": (0.1, 100.0, True),
    "nvls_latency_us": (1.0, 200.0, True),
    "pipeline_fill_loops": (0.0, 40.0, False),
    "stage_fill_loops": (0.0, 8.0, False),
    "alltoall_efficiency": (0.1, 1.0, True),
    "alltoall_decay": (0.0, 2.0, False),
    "p2p_fill_chunks": (0.0, 8.0, False),
}
# A weak prior on the base profile (its numbers are cited): each field pays PRIOR_WEIGHT ×
# (log of its change)² (linear fields: change / a quarter of their range), so a field the rows
# barely constrain stays put instead of drifting to buy a 0.1 % gain.
PRIOR_WEIGHT = 0.01
GRID_POINTS = 9
GOLDEN_STEPS = 16
SWEEPS = 3
_GOLD = (math.sqrt(5) - 1) / 2


class FitError(ValueError):
    """The measurements cannot be fitted or predicted (one-line message)."""


@dataclass(frozen=True)
class Measurement:
    collective: Collective
    size_bytes: int
    nodes: int
    gpus_per_node: int
    busbw_gb_per_s: float
    time_us: float
    source: str = ""
    algorithm: str = "auto"  # a forced NCCL_ALGO, as the run was made
    nodes_per_domain: int | None = None  # None: the profile's NVLink domain size
    gpus_per_thread: int = 1  # GPUs one host thread drives (nccl-tests -g G)


@dataclass(frozen=True)
class FitRow:
    measurement: Measurement
    predicted_time_us: float
    predicted_busbw_gb_per_s: float
    error: float  # signed relative busbw error (pred/meas - 1)
    fitted: bool  # True if the row was used for fitting


@dataclass(frozen=True)
class FitResult:
    profile: FabricProfile
    rows: tuple[FitRow, ...]
    median_abs_error: float  # over the fitted rows
    worst_abs_error: float
    held_out_median_abs_error: float = math.nan  # over the held-out rows (nan when none)
    held_out_worst_abs_error: float = math.nan
    fitted_fields: tuple[str, ...] = ()  # fields whose value the fit changed


class _Row(Protocol):
    @property
    def size_bytes(self) -> int: ...
    @property
    def out_time_us(self) -> float: ...
    @property
    def out_busbw_gb_per_s(self) -> float: ...


class _Log(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def collective(self) -> Collective | None: ...
    @property
    def ranks(self) -> int | None: ...
    @property
    def nodes(self) -> int | None: ...
    @property
    def gpus_per_node(self) -> int | None: ...
    @property
    def rows(self) -> Sequence[_Row]: ...


def measurements_from_log(
    log: _Log, *, nodes: int | None = None, gpus_per_node: int | None = None, source: str = ""
) -> tuple[Measurement, ...]:
    """The out-of-place rows of a parsed nccl-tests log as measurements. ``nodes`` and
    ``gpus_per_node`` override the header; one of them is derived from the rank count when the
    other is known. FitError when the collective or the layout cannot be determined."""
    if log.collective is None:
        raise FitError(f"{log.path}: unknown collective (name the test, e.g. all_reduce_perf)")
    nodes = nodes or log.nodes
    gpus = gpus_per_node or log.gpus_per_node
    if log.ranks:
        if nodes and not gpus and log.ranks % nodes == 0:
            gpus = log.ranks // nodes
        if gpus and not nodes and log.ranks % gpus == 0:
            nodes = log.ranks // gpus
    if not nodes or not gpus:
        raise FitError(f"{log.path}: node and GPU counts unknown (pass --nodes/--gpus-per-node)")
    if log.ranks and nodes * gpus != log.ranks:
        raise FitError(f"{log.path}: {nodes} nodes x {gpus} GPUs != {log.ranks} ranks in the log")
    return tuple(
        Measurement(
            log.collective,
            r.size_bytes,
            nodes,
            gpus,
            r.out_busbw_gb_per_s,
            r.out_time_us,
            source or log.path,
            gpus_per_thread=int(getattr(log, "gpus_per_thread", None) or 1),
        )
        for r in log.rows
        if r.size_bytes > 0 and r.out_time_us > 0
    )


def layout(m: Measurement, profile: FabricProfile) -> list[GpuSlot]:
    """Ranks as nccl-tests places them: GPU j of every node on its rail, nodes in domains."""
    per_domain = m.nodes_per_domain or max(
        1, profile.gpus_per_nvlink_domain // profile.gpus_per_node
    )
    nics, per_node = profile.nics_per_node, max(profile.gpus_per_node, m.gpus_per_node)
    return [
        GpuSlot(f"n{n}", j, min(nics - 1, j * nics // per_node), f"d{n // per_domain}", "rg0", "s0")
        for n in range(m.nodes)
        for j in range(m.gpus_per_node)
    ]


def measured_seconds(m: Measurement) -> float:
    if m.time_us > 0:
        return m.time_us * 1e-6
    ranks = m.nodes * m.gpus_per_node
    algbw = m.busbw_gb_per_s / bus_factor(m.collective, ranks)
    if algbw <= 0:
        raise FitError(f"row of {m.size_bytes} B has neither a time nor a busbw")
    return m.size_bytes / (algbw * 1e9)


def _check(m: Measurement) -> None:
    if m.nodes < 1 or m.gpus_per_node < 1 or m.nodes * m.gpus_per_node < 2 or m.size_bytes <= 0:
        raise FitError(
            f"row {m.collective} {m.size_bytes} B on {m.nodes}x{m.gpus_per_node} GPUs: "
            "needs >= 2 ranks and > 0 bytes"
        )


def run_seconds(profile: FabricProfile, m: Measurement, shape: GroupShape) -> float:
    """Time of one call as nccl-tests measures it: the model's time, or, when one host thread
    drives G GPUs (``-g G``), at least G kernel launches back to back — nccl-tests issues the
    calls back to back, so a launch-bound loop runs at the host's pace, not the GPUs'."""
    est = estimate_shape(m.collective, m.size_bytes, shape, profile, algorithm=m.algorithm)
    if m.gpus_per_thread > 1:
        return max(est.seconds, m.gpus_per_thread * profile.launch_us_per_gpu * 1e-6)
    return est.seconds


def _row(profile: FabricProfile, m: Measurement, shape: GroupShape, fitted: bool) -> FitRow:
    seconds = run_seconds(profile, m, shape)
    error = measured_seconds(m) / seconds - 1
    busbw = m.size_bytes / seconds / 1e9 * bus_factor(m.collective, m.nodes * m.gpus_per_node)
    return FitRow(m, seconds * 1e6, busbw, error, fitted)


def predict(profile: FabricProfile, m: Measurement) -> FitRow:
    """The model's prediction for one measurement on ``profile`` (``fitted`` is False)."""
    _check(m)
    return _row(profile, m, summarize_group(layout(m, profile)), False)


def _objective(
    profile: FabricProfile, cases: Sequence[tuple[Measurement, GroupShape, float]]
) -> float:
    total = 0.0
    for m, shape, seconds in cases:
        total += abs(math.log(run_seconds(profile, m, shape) / seconds))
    return total / len(cases)


def _prior(profile: FabricProfile, base: FabricProfile, names: Sequence[str]) -> float:
    total = 0.0
    for name in names:
        value, start = float(getattr(profile, name)), float(getattr(base, name))
        if value == start:
            continue
        low, high, log_space = FITTABLE[name]
        if log_space and value > 0 and start > 0:
            total += math.log(value / start) ** 2
        else:
            total += ((value - start) / ((high - low) / 4)) ** 2
    return PRIOR_WEIGHT * total


def _candidates(value: float, low: float, high: float, log_space: bool) -> list[float]:
    if log_space:
        a, b = math.log(low), math.log(high)
        return [math.exp(a + (b - a) * i / (GRID_POINTS - 1)) for i in range(GRID_POINTS)]
    return [low + (high - low) * i / (GRID_POINTS - 1) for i in range(GRID_POINTS)]


def _golden(score: Callable[[float], float], a: float, b: float) -> float:
    c, d = b - _GOLD * (b - a), a + _GOLD * (b - a)
    fc, fd = score(c), score(d)
    for _ in range(GOLDEN_STEPS):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - _GOLD * (b - a)
            fc = score(c)
        else:
            a, c, fc = c, d, fd
            d = a + _GOLD * (b - a)
            fd = score(d)
    return c if fc <= fd else d


def _search_field(
    profile: FabricProfile, name: str, score: Callable[[FabricProfile], float]
) -> FabricProfile:
    low, high, log_space = FITTABLE[name]
    current = float(getattr(profile, name))
    low, high = min(low, current), max(high, current)
    log_space = log_space and low > 0

    def at(x: float) -> float:
        value = math.exp(x) if log_space else x
        return score(_with(profile, name, value))

    grid = _candidates(current, low, high, log_space)
    xs = [math.log(v) if log_space else v for v in grid]
    scores = [at(x) for x in xs]
    best = min(range(len(xs)), key=lambda i: scores[i])
    x = _golden(at, xs[max(best - 1, 0)], xs[min(best + 1, len(xs) - 1)])
    value = _round(math.exp(x) if log_space else x)
    trial = _with(profile, name, value)
    return trial if score(trial) < score(profile) - 1e-9 else profile


def _with(profile: FabricProfile, name: str, value: float) -> FabricProfile:
    change: dict[str, Any] = {name: value}
    return dataclasses.replace(profile, **change)


def _round(value: float) -> float:
    return float(f"{value:.4g}")


def fittable_fields(profile: FabricProfile) -> tuple[str, ...]:
    """Fields :func:`fit_profile` may change on this profile (NVLS ones only with NVLS)."""
    if profile.torus is not None:
        return ()
    nvls_only = ("nvls_efficiency", "nvls_latency_us", "pipeline_fill_loops")
    return tuple(f for f in FITTABLE if profile.nvls or f not in nvls_only)


def _summary(rows: Sequence[FitRow]) -> tuple[float, float]:
    errors = [abs(r.error) for r in rows]
    return (statistics.median(errors), max(errors)) if errors else (math.nan, math.nan)


def fit_profile(
    base: FabricProfile,
    rows: Sequence[Measurement],
    *,
    name: str | None = None,
    held_out: Sequence[Measurement] = (),
) -> FitResult:
    """Fit ``base``'s :func:`fittable_fields` to ``rows``; ``held_out`` rows are predicted with
    the fitted profile and reported (``fitted=False``) but never fitted on."""
    if not rows:
        raise FitError("no measurements to fit")
    for m in (*rows, *held_out):
        _check(m)
    shapes = {m: summarize_group(layout(m, base)) for m in (*rows, *held_out)}
    cases = [(m, shapes[m], measured_seconds(m)) for m in rows]

    names = fittable_fields(base)

    def score(p: FabricProfile) -> float:
        return _objective(p, cases) + _prior(p, base, names)

    profile = base
    for _ in range(SWEEPS):
        before = profile
        for field_name in names:
            profile = _search_field(profile, field_name, score)
        if profile == before:
            break
    label = name or f"{base.name}-calibrated"[:63]
    used = sorted({m.source for m in rows if m.source})
    note = f"fitted on {len(rows)} rows ({', '.join(used)[:400] or 'unnamed sources'})"
    profile = dataclasses.replace(profile, name=label, sources=(*base.sources, note))
    out = tuple(
        [_row(profile, m, shapes[m], True) for m in rows]
        + [_row(profile, m, shapes[m], False) for m in held_out]
    )
    median, worst = _summary([r for r in out if r.fitted])
    held_median, held_worst = _summary([r for r in out if not r.fitted])
    changed = tuple(f for f in FITTABLE if getattr(profile, f) != getattr(base, f))
    return FitResult(profile, out, median, worst, held_median, held_worst, changed)
