"""Fit a fabric profile's bandwidths, latencies and efficiencies to measured collectives.

Theory of operation
-------------------
A :class:`Measurement` is one nccl-tests row (collective, per-rank buffer, nodes × GPUs per node,
measured time and busbw, where it came from). :func:`predict` lays the ranks out as nccl-tests
does on the profile's hardware (GPU j of every node on rail j, nodes grouped into the profile's
NVLink domains) and runs the cost model. :func:`fit_profile` then searches the fields listed in
``FITTABLE`` (:mod:`fabricfit.calibrate.fields`) to minimise the mean |log(predicted time /
measured time)| over the rows — a relative error that weighs an 8-byte latency row and an
8-GiB bandwidth row alike, and is robust to a few outliers.

A field is fitted only when the rows constrain it (:func:`constraints`): some row that can
determine it — any row for a latency, only a bandwidth row (> ``LATENCY_MAX_BYTES``) for an
efficiency or a pipeline fill, whose effect on a latency row is an artefact of pricing a few
KiB as a transfer — must move by at least ``SENSITIVITY_MIN`` (1 %) when the field moves one step
(×1.1, or 5 % of its range). Every other field keeps the base profile's value, with the reason.
So a profile fitted on small-message rows only keeps the base's bandwidths and fills.

The optimiser is deliberately small and deterministic (no random starts, no dependencies):
coordinate descent over the constrained fields (:mod:`fabricfit.calibrate.search`), sweep after
sweep until one changes nothing; a field changes only when that lowers the objective by at
least :data:`MIN_GAIN`. A weak prior (``fields.PRIOR_WEIGHT``) on the base's values keeps fields
that trade off against each other (the per-call latency across NICs and the per-hop one, when
few multi-node rows separate them) near the base's cited numbers. Since the prior is anchored
at the start, fitting a result again may still move it a little (each fit a proximal step);
:func:`fit_to_fixpoint` repeats the fit from its own result until it returns it unchanged
(what the presets are fitted with, so that refitting them changes nothing). Fitted values are
rounded to four significant digits, and errors are reported on the rounded profile.

``error`` of a row is the signed relative busbw error ``predicted / measured − 1``, computed from
the times (busbw is size/time times the same factor on both sides, and the time keeps its
precision at sizes where nccl-tests prints a busbw of 0.00).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from fabricfit.calibrate.fields import (
    ALL_FIELDS,
    LATENCY_MAX_BYTES,
    SCALE_FITTABLE,
    SENSITIVITY_MIN,
    UNCONSTRAINED,
    fittable_fields,
    prior_penalty,
    scale_precondition,
    steps,
)
from fabricfit.calibrate.measurements import (
    FitError,
    Measurement,
    measured_seconds,
    measurements_from_log,
    nccl_release_of,
    row_timing,
    shared_release,
)
from fabricfit.calibrate.search import best_value
from fabricfit.cost.chunks import call_channels
from fabricfit.cost.collectives import bus_factor, estimate_shape
from fabricfit.cost.shape import GroupShape, summarize_group
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.profiles.ncclsetup import run_env_fields
from fabricfit.fabric.topology import GpuSlot

__all__ = [
    "FitError",
    "FitResult",
    "FitRow",
    "Measurement",
    "constraints",
    "fit_profile",
    "fit_to_fixpoint",
    "layout",
    "measured_seconds",
    "measurements_from_log",
    "nccl_release_of",
    "predict",
    "row_timing",
    "run_seconds",
    "shared_release",
]

# A field changes only when that lowers the score by this much (0.01 points of mean |log
# error|): no drift to buy a 0.001 % gain, and a fit that ends when a sweep changes nothing.
MIN_GAIN = 1e-4
MAX_SWEEPS = 30
MAX_REFITS = 20


# A row as the fitter uses it: the measurement, its group shape, the measured seconds.
_Case = tuple[Measurement, GroupShape, float]


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
    fitted_fields: tuple[str, ...] = ()  # fields the rows constrain: searched (may stay put)
    kept_fields: tuple[tuple[str, str], ...] = ()  # (field, why) kept at the base's value


def layout(m: Measurement, profile: FabricProfile) -> list[GpuSlot]:
    """Ranks as nccl-tests places them: GPU j of every node on its rail, nodes in NVLink domains
    and the domains in rail groups of the profile's size, as ``fabricfit cost`` lays them out."""
    return _slots(_Layout.of(m, profile))


def shape_of(m: Measurement, profile: FabricProfile) -> GroupShape:
    """The group shape of ``m``'s ranks on ``profile`` (:func:`layout`), computed once per layout:
    a log's rows share it, and a large run's layout is worth not rebuilding for every row."""
    return _shape(_Layout.of(m, profile))


class _Layout(NamedTuple):
    nodes: int
    gpus: int
    nodes_per_domain: int
    domains_per_group: int
    nics: int
    gpus_per_node: int  # the board's, for the GPU -> rail map

    @classmethod
    def of(cls, m: Measurement, profile: FabricProfile) -> _Layout:
        per_group = profile.nodes_per_rail_group // profile.nodes_per_nvlink_domain
        return cls(
            m.nodes,
            m.gpus_per_node,
            m.nodes_per_domain or profile.nodes_per_nvlink_domain,
            max(1, per_group),
            profile.nics_per_node,
            max(profile.gpus_per_node, m.gpus_per_node),
        )


def _slots(key: _Layout) -> list[GpuSlot]:
    nics, per_domain = key.nics, key.nodes_per_domain
    return [
        GpuSlot(
            f"n{n}",
            j,
            min(nics - 1, j * nics // key.gpus_per_node),
            f"d{n // per_domain}",
            f"rg{n // per_domain // key.domains_per_group}",
            "s0",
        )
        for n in range(key.nodes)
        for j in range(key.gpus)
    ]


@lru_cache(maxsize=1024)
def _shape(key: _Layout) -> GroupShape:
    return summarize_group(_slots(key))


def run_seconds(profile: FabricProfile, m: Measurement, shape: GroupShape) -> float:
    """Time of one call as nccl-tests measures it: the model's time, or, when one host thread
    drives G GPUs (``-g G``), at least G kernel launches back to back — nccl-tests issues the
    calls back to back, so a launch-bound loop runs at the host's pace, not the GPUs'. Each
    launch costs the host a fixed time plus a time per channel the call runs on (NCCL fills
    every channel's work on the host; a small call runs on fewer channels). A run that names
    its NCCL release is priced with that release's tuner (``nccl_version``), one made with an
    NCCL environment (``nccl_env``: ``NCCL_ALGO=Ring``, …) as NCCL ran it."""
    if m.nccl_version and m.nccl_version != profile.nccl_version:
        profile = _on_release(profile, m.nccl_version)
    if m.nccl_env:
        profile = _in_env(profile, m.nccl_env)
    est = estimate_shape(m.collective, m.size_bytes, shape, profile, algorithm=m.algorithm)
    if m.gpus_per_thread > 1:
        channels = call_channels(est.algorithm, est.protocol, m.size_bytes, shape, profile)
        launch = profile.launch_us_per_gpu + channels * profile.launch_us_per_channel
        return max(est.seconds, m.gpus_per_thread * launch * 1e-6)
    return est.seconds


@lru_cache(maxsize=256)
def _on_release(profile: FabricProfile, version: str) -> FabricProfile:
    return dataclasses.replace(profile, nccl_version=version)


@lru_cache(maxsize=256)
def _in_env(profile: FabricProfile, env: tuple[tuple[str, str], ...]) -> FabricProfile:
    changes: dict[str, Any] = {}
    for key, value in env:
        changes.update(run_env_fields(key, value))
    return dataclasses.replace(profile, **changes)


def _check(m: Measurement) -> None:
    if m.nodes < 1 or m.gpus_per_node < 1 or m.nodes * m.gpus_per_node < 2 or m.size_bytes <= 0:
        raise FitError(
            f"row {m.collective} {m.size_bytes} B on {m.nodes}x{m.gpus_per_node} GPUs: "
            "needs >= 2 ranks and > 0 bytes"
        )


def _row(profile: FabricProfile, m: Measurement, shape: GroupShape, fitted: bool) -> FitRow:
    seconds = run_seconds(profile, m, shape)
    error = measured_seconds(m) / seconds - 1
    busbw = m.size_bytes / seconds / 1e9 * bus_factor(m.collective, m.nodes * m.gpus_per_node)
    return FitRow(m, seconds * 1e6, busbw, error, fitted)


def predict(profile: FabricProfile, m: Measurement) -> FitRow:
    """The model's prediction for one measurement on ``profile`` (``fitted`` is False)."""
    _check(m)
    return _row(profile, m, shape_of(m, profile), False)


def _objective(profile: FabricProfile, cases: Sequence[_Case]) -> float:
    total = 0.0
    for m, shape, seconds in cases:
        total += abs(math.log(run_seconds(profile, m, shape) / seconds))
    return total / len(cases)


def sensitivity(profile: FabricProfile, name: str, cases: Sequence[_Case]) -> float:
    """The largest |log| change of a row's predicted time when ``name`` moves one step either
    way (×/÷ LOG_STEP, or ± LINEAR_STEP of its range, within its bounds), over the rows that
    can determine it (bandwidth rows only for a bandwidth field). 0 when there are none."""
    spec = ALL_FIELDS[name]
    rows = [c for c in cases if not spec.bandwidth or c[0].size_bytes > LATENCY_MAX_BYTES]
    value = float(getattr(profile, name))
    base = [run_seconds(profile, m, shape) for m, shape, _ in rows]
    found = 0.0
    for step in steps(name, value):
        moved = _with(profile, name, step)
        for (m, shape, _), seconds in zip(rows, base, strict=True):
            found = max(found, abs(math.log(run_seconds(moved, m, shape) / seconds)))
    return found


def constraints(
    profile: FabricProfile, cases: Sequence[_Case], *, scale: bool = False
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The fittable fields the rows constrain, and the others with the reason they are kept
    (with ``scale``, the scale terms too, where the rows separate them:
    ``fields.scale_precondition``)."""
    fitted, kept = [], []
    bandwidth_rows = any(m.size_bytes > LATENCY_MAX_BYTES for m, _, _ in cases)
    shapes = [(m.size_bytes, shape) for m, shape, _ in cases]
    for name in fittable_fields(profile, scale=scale):
        if ALL_FIELDS[name].bandwidth and not bandwidth_rows:
            kept.append((name, f"{UNCONSTRAINED} (no row > {LATENCY_MAX_BYTES // 1024} KiB)"))
            continue
        if name in SCALE_FITTABLE and (why := scale_precondition(name, shapes)):
            kept.append((name, f"{UNCONSTRAINED} ({why})"))
            continue
        moved = sensitivity(profile, name, cases)
        if moved >= SENSITIVITY_MIN:
            fitted.append(name)
        else:
            why = f"{UNCONSTRAINED} (a step moves no row by {SENSITIVITY_MIN:.0%}: {moved:.1%})"
            kept.append((name, why))
    return tuple(fitted), tuple(kept)


def _search_field(
    profile: FabricProfile, name: str, score: Callable[[FabricProfile], float]
) -> FabricProfile:
    spec = ALL_FIELDS[name]
    current = float(getattr(profile, name))
    value = best_value(
        lambda v: score(_with(profile, name, v)),
        current,
        (spec.low, spec.high),
        spec.log_space,
        MIN_GAIN,
    )
    return profile if value == current else _with(profile, name, value)


def _with(profile: FabricProfile, name: str, value: float) -> FabricProfile:
    change: dict[str, Any] = {name: value}
    return dataclasses.replace(profile, **change)


def _descend(
    base: FabricProfile, names: Sequence[str], score: Callable[[FabricProfile], float]
) -> FabricProfile:
    """Coordinate descent over ``names`` until a sweep changes nothing (at most MAX_SWEEPS)."""
    profile = base
    for _ in range(MAX_SWEEPS):
        before = profile
        for name in names:
            profile = _search_field(profile, name, score)
        if profile == before:
            break
    return profile


def _summary(rows: Sequence[FitRow]) -> tuple[float, float]:
    errors = [abs(r.error) for r in rows]
    return (statistics.median(errors), max(errors)) if errors else (math.nan, math.nan)


def fit_profile(
    base: FabricProfile,
    rows: Sequence[Measurement],
    *,
    name: str | None = None,
    held_out: Sequence[Measurement] = (),
    hold: Collection[str] = (),
    scale: bool = False,
) -> FitResult:
    """Fit the fields of ``base`` that ``rows`` constrain (:func:`constraints`); the others keep
    their value, and so do the fields in ``hold`` (numbers known from elsewhere, e.g. the NVLink
    board's). ``held_out`` rows are predicted with the fitted profile and reported
    (``fitted=False``) but never fitted on. ``scale``: fit the scale terms too
    (``fields.SCALE_FITTABLE``; a cluster's own calibration, never a preset's)."""
    if not rows:
        raise FitError("no measurements to fit")
    for m in (*rows, *held_out):
        _check(m)
    shapes = {m: shape_of(m, base) for m in (*rows, *held_out)}
    cases = [(m, shapes[m], measured_seconds(m)) for m in rows]
    names, kept = constraints(base, cases, scale=scale)
    kept = (*kept, *((f, "held: known from elsewhere") for f in names if f in hold))
    # scale terms first: with the flat fields at the start's values they take the trend across
    # node counts, before a flat field averages it away (coordinate descent keeps the first fit)
    names = tuple(f for f in names if f not in hold)
    names = tuple(sorted(names, key=lambda f: f not in SCALE_FITTABLE))
    profile = _descend(base, names, lambda p: _objective(p, cases) + prior_penalty(p, base, names))
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
    return FitResult(profile, out, median, worst, held_median, held_worst, names, kept)


def fit_to_fixpoint(
    base: FabricProfile,
    rows: Sequence[Measurement],
    *,
    name: str | None = None,
    held_out: Sequence[Measurement] = (),
    hold: Collection[str] = (),
) -> FitResult:
    """:func:`fit_profile` again from its own result until it returns it unchanged (at most
    MAX_REFITS fits): a profile that fitting the same rows does not move."""
    name = name or f"{base.name}-calibrated"[:63]
    result = fit_profile(base, rows, name=name, held_out=held_out, hold=hold)
    for _ in range(MAX_REFITS):
        start = dataclasses.replace(result.profile, sources=base.sources)
        again = fit_profile(start, rows, name=name, held_out=held_out, hold=hold)
        if again.profile == result.profile and again.fitted_fields == result.fitted_fields:
            break
        result = again
    return result
