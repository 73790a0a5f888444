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
from typing import Any, Protocol

from fabricfit.calibrate.fields import (
    FITTABLE,
    LATENCY_MAX_BYTES,
    SENSITIVITY_MIN,
    UNCONSTRAINED,
    fittable_fields,
    prior_penalty,
    steps,
)
from fabricfit.calibrate.search import best_value
from fabricfit.cost.chunks import call_channels
from fabricfit.cost.collectives import Collective, bus_factor, estimate_shape
from fabricfit.cost.shape import GroupShape, summarize_group
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.profiles.ncclsetup import NcclSetupError, parse_version, run_env_fields
from fabricfit.fabric.topology import GpuSlot

# A field changes only when that lowers the score by this much (0.01 points of mean |log
# error|): no drift to buy a 0.001 % gain, and a fit that ends when a sweep changes nothing.
MIN_GAIN = 1e-4
MAX_SWEEPS = 30
MAX_REFITS = 20


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
    nccl_version: str | None = None  # the NCCL release the run used, when known
    # NCCL environment the run was made with ((key, value), ncclsetup.RUN_ENV_KEYS), sorted
    nccl_env: tuple[tuple[str, str], ...] = ()


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


class _Row(Protocol):
    @property
    def size_bytes(self) -> int: ...
    @property
    def out_time_us(self) -> float: ...
    @property
    def out_busbw_gb_per_s(self) -> float: ...
    @property
    def in_time_us(self) -> float | None: ...
    @property
    def in_busbw_gb_per_s(self) -> float | None: ...


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
    """The rows of a parsed nccl-tests log as measurements, each at the faster of its two timings
    (``row_timing``). ``nodes`` and ``gpus_per_node`` override the header; one of them is derived
    from the rank count when the other is known. FitError when the collective or the layout
    cannot be determined."""
    if log.collective is None:
        raise FitError(
            f"{log.path}: unknown collective: the log names no test (pass --collective, e.g."
            " --collective all-reduce)"
        )
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
            *row_timing(r),
            source or log.path,
            gpus_per_thread=int(getattr(log, "gpus_per_thread", None) or 1),
            nccl_version=nccl_release_of(getattr(log, "nccl_version", None)),
            nccl_env=tuple(getattr(log, "nccl_env", ())),
        )
        for r in log.rows
        if r.size_bytes > 0 and r.out_time_us > 0
    )


def row_timing(row: _Row) -> tuple[float, float]:
    """(busbw GB/s, time µs) of a result row: the faster of its out-of-place and in-place timings.
    nccl-tests times the same call at the same size twice; a stall in one of them (the first
    call's warm-up, other traffic) only ever adds time, while from 16 MiB the median ratio of
    the two is within 2 % of 1 on every judged log here (in-place all-gather ~1 % faster:
    it skips the local copy)."""
    inside = row.in_time_us
    if inside is not None and 0 < inside < row.out_time_us:
        return row.in_busbw_gb_per_s or 0.0, inside
    return row.out_busbw_gb_per_s, row.out_time_us


def nccl_release_of(value: object) -> str | None:
    """``value`` when it is an NCCL release ("2.26.2"), else None (not stated, or not one)."""
    try:
        return parse_version(value)
    except NcclSetupError:
        return None


def shared_release(rows: Sequence[Measurement]) -> str | None:
    """The NCCL release every row names, when they all name the same one."""
    found = {m.nccl_version for m in rows}
    return found.pop() if len(found) == 1 else None


def layout(m: Measurement, profile: FabricProfile) -> list[GpuSlot]:
    """Ranks as nccl-tests places them: GPU j of every node on its rail, nodes in domains."""
    per_domain = m.nodes_per_domain or profile.nodes_per_nvlink_domain
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


def _row(profile: FabricProfile, m: Measurement, shape: GroupShape, fitted: bool) -> FitRow:
    seconds = run_seconds(profile, m, shape)
    error = measured_seconds(m) / seconds - 1
    busbw = m.size_bytes / seconds / 1e9 * bus_factor(m.collective, m.nodes * m.gpus_per_node)
    return FitRow(m, seconds * 1e6, busbw, error, fitted)


def predict(profile: FabricProfile, m: Measurement) -> FitRow:
    """The model's prediction for one measurement on ``profile`` (``fitted`` is False)."""
    _check(m)
    return _row(profile, m, summarize_group(layout(m, profile)), False)


def _objective(profile: FabricProfile, cases: Sequence[_Case]) -> float:
    total = 0.0
    for m, shape, seconds in cases:
        total += abs(math.log(run_seconds(profile, m, shape) / seconds))
    return total / len(cases)


def sensitivity(profile: FabricProfile, name: str, cases: Sequence[_Case]) -> float:
    """The largest |log| change of a row's predicted time when ``name`` moves one step either
    way (×/÷ LOG_STEP, or ± LINEAR_STEP of its range, within its bounds), over the rows that
    can determine it (bandwidth rows only for a bandwidth field). 0 when there are none."""
    spec = FITTABLE[name]
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
    profile: FabricProfile, cases: Sequence[_Case]
) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The fittable fields the rows constrain, and the others with the reason they are kept."""
    fitted, kept = [], []
    bandwidth_rows = any(m.size_bytes > LATENCY_MAX_BYTES for m, _, _ in cases)
    for name in fittable_fields(profile):
        if FITTABLE[name].bandwidth and not bandwidth_rows:
            kept.append((name, f"{UNCONSTRAINED} (no row > {LATENCY_MAX_BYTES // 1024} KiB)"))
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
    spec = FITTABLE[name]
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
) -> FitResult:
    """Fit the fields of ``base`` that ``rows`` constrain (:func:`constraints`); the others keep
    their value, and so do the fields in ``hold`` (numbers known from elsewhere, e.g. the NVLink
    board's). ``held_out`` rows are predicted with the fitted profile and reported
    (``fitted=False``) but never fitted on."""
    if not rows:
        raise FitError("no measurements to fit")
    for m in (*rows, *held_out):
        _check(m)
    shapes = {m: summarize_group(layout(m, base)) for m in (*rows, *held_out)}
    cases = [(m, shapes[m], measured_seconds(m)) for m in rows]
    names, kept = constraints(base, cases)
    kept = (*kept, *((f, "held: known from elsewhere") for f in names if f in hold))
    names = tuple(f for f in names if f not in hold)
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
