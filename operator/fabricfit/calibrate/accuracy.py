"""How right the cost model is, by regime: measured rows against predictions, per band.

Theory of operation
-------------------
A :class:`Case` is one published measurement (a :class:`~fabricfit.calibrate.fit.Measurement`
with its source) on a named preset, marked ``calibration`` when the preset's numbers were fitted
on it. :func:`judge` predicts every case on its preset. Rows of at most 64 KiB per rank are
latency rows, judged by the time ratio max(p/m, m/p); the others by |busbw error|.

:func:`band_table` groups the judged rows by size band (≤ 64 KiB, 64 KiB–16 MiB, 16–256 MiB,
≥ 256 MiB) × scope (NVLink domains spanned: one, 2–4, 5–7, ≥ 8; TPU rows apart) × collective
and reports held-out and fitted rows apart. :func:`leave_one_source_out` refits each preset
without one source's rows (with :func:`~fabricfit.calibrate.fit.fit_profile`) and predicts that
source; :func:`small_to_large` fits on runs of ≤ 4 domains and predicts ≥ 8.
Pure: callers read the files.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabricfit.calibrate.fields import LATENCY_MAX_BYTES
from fabricfit.calibrate.fit import FitRow, Measurement, fit_profile, measured_seconds, predict
from fabricfit.calibrate.regimes import (
    AT_SCALE_MIN_ROWS,
    AT_SCALE_MIN_SOURCES,
    SCOPES,
    SIZE_BANDS,
    RegimeAccuracy,
    ScaleCaveat,
    domains_spanned,
    scope,
    size_band,
)
from fabricfit.cost.collectives import Collective
from fabricfit.fabric.profiles import FabricProfile

REFERENCE_ROWS_PER_LINE = 4


@dataclass(frozen=True)
class Case:
    id: str
    fabric: str
    measurement: Measurement
    calibration: bool = False
    note: str = ""
    reference: str = ""  # non-empty: printed with this reason, never judged or fitted


@dataclass(frozen=True)
class Judged:
    case: Case
    row: FitRow

    @property
    def latency(self) -> bool:
        return self.case.measurement.size_bytes <= LATENCY_MAX_BYTES

    @property
    def score(self) -> float:
        """|busbw error|, or the time ratio (>= 1) for latency rows."""
        if self.latency:
            ratio = 1 + self.row.error  # measured time / predicted time
            return max(ratio, 1 / ratio)
        return abs(self.row.error)


def domains_of(m: Measurement, profile: FabricProfile) -> int:
    return domains_spanned(m.nodes, profile, m.nodes_per_domain)


def scope_of(m: Measurement, profile: FabricProfile) -> str:
    """NVLink domains spanned; TPU rows (a torus, no NCCL) form a scope of their own."""
    return scope(domains_of(m, profile), profile)


def parse_cases(doc: Any) -> list[Case]:
    """Cases from the measurements document: ``rows`` (one mapping per figure) and ``sweeps``
    (one mapping per run, ``points: [[size_bytes, time_us], ...]``), see its header."""
    out = [_case(item) for item in doc.get("rows", [])]
    for sweep in doc.get("sweeps", []):
        for size, time_us in sweep["points"]:
            item = {k: v for k, v in sweep.items() if k != "points"}
            item.update(id=f"{sweep['id']}@{size}", size_bytes=size, time_us=time_us)
            out.append(_case(item))
    return out


def _case(item: Mapping[str, Any]) -> Case:
    ranks = item["nodes"] * item["gpus_per_node"]
    m = Measurement(
        collective=Collective(item["collective"]),
        size_bytes=int(item["size_bytes"]),
        nodes=int(item["nodes"]),
        gpus_per_node=int(item["gpus_per_node"]),
        busbw_gb_per_s=float(item.get("busbw_gb_per_s", 0.0)),
        time_us=float(item.get("time_us", 0.0)),
        source=str(item["source"]),
        algorithm=str(item.get("algorithm", "auto")),
        nodes_per_domain=item.get("nodes_per_domain"),
    )
    if m.busbw_gb_per_s and not m.time_us and ranks > 1:
        m = _with_time(m)
    return Case(
        id=str(item["id"]),
        fabric=str(item["fabric"]),
        measurement=m,
        calibration=bool(item.get("calibration", False)),
        note=str(item.get("note", "")),
        reference=str(item.get("reference", "")),
    )


def _with_time(m: Measurement) -> Measurement:
    return Measurement(
        m.collective,
        m.size_bytes,
        m.nodes,
        m.gpus_per_node,
        m.busbw_gb_per_s,
        measured_seconds(m) * 1e6,
        m.source,
        m.algorithm,
        m.nodes_per_domain,
        m.gpus_per_thread,
    )


def judge(cases: Iterable[Case], profiles: Mapping[str, FabricProfile]) -> list[Judged]:
    return [Judged(c, _fitted(predict(profiles[c.fabric], c.measurement), c)) for c in cases]


def _fitted(row: FitRow, case: Case) -> FitRow:
    return FitRow(
        row.measurement,
        row.predicted_time_us,
        row.predicted_busbw_gb_per_s,
        row.error,
        case.calibration,
    )


@dataclass(frozen=True)
class Band:
    size: str
    scope: str
    collective: str
    held: tuple[Judged, ...]
    fitted: tuple[Judged, ...]

    @property
    def latency(self) -> bool:
        return self.size == SIZE_BANDS[0]

    def stats(self, fitted: bool | None = None) -> tuple[int, float, float]:
        rows = self.held + self.fitted if fitted is None else self.fitted if fitted else self.held
        scores = [j.score for j in rows]
        if not scores:
            return 0, math.nan, math.nan
        return len(scores), statistics.median(scores), max(scores)

    def meets_targets(self) -> bool:
        return self.summary().meets_targets

    def summary(self) -> RegimeAccuracy:
        n, median, worst = self.stats()
        _, held_median, held_worst = self.stats(False)
        fitted, fitted_median, fitted_worst = self.stats(True)
        return RegimeAccuracy(
            self.size,
            self.scope,
            self.collective,
            n,
            fitted,
            median,
            worst,
            held_median,
            held_worst,
            fitted_median,
            fitted_worst,
        )


def band_table(judged: Iterable[Judged], profiles: Mapping[str, FabricProfile]) -> list[Band]:
    groups: dict[tuple[int, int, str], list[Judged]] = {}
    for j in judged:
        if j.case.reference:
            continue
        m = j.case.measurement
        key = (
            SIZE_BANDS.index(size_band(m.size_bytes)),
            SCOPES.index(scope_of(m, profiles[j.case.fabric])),
            m.collective.value,
        )
        groups.setdefault(key, []).append(j)
    return [
        Band(
            SIZE_BANDS[s],
            SCOPES[sc],
            coll,
            tuple(j for j in rows if not j.case.calibration),
            tuple(j for j in rows if j.case.calibration),
        )
        for (s, sc, coll), rows in sorted(groups.items())
    ]


def family_regimes(
    judged: Iterable[Judged], profiles: Mapping[str, FabricProfile], members: Collection[str]
) -> list[RegimeAccuracy]:
    """The regime summaries over the rows of the presets in ``members`` only (a family)."""
    return [
        b.summary() for b in band_table((j for j in judged if j.case.fabric in members), profiles)
    ]


def scale_caveat(
    judged: Iterable[Judged], profiles: Mapping[str, FabricProfile]
) -> ScaleCaveat | None:
    """What the held-out rows at scale say (``regimes.ScaleCaveat``), over every GPU preset's
    rows there; None with fewer than ``AT_SCALE_MIN_ROWS`` rows or ``AT_SCALE_MIN_SOURCES``
    sources (never a figure from one row or one run)."""
    rows = []
    for j in judged:
        m, profile = j.case.measurement, profiles[j.case.fabric]
        if j.case.reference or j.case.calibration or profile.is_torus:
            continue
        if ScaleCaveat.applies(m.size_bytes, scope_of(m, profile)):
            rows.append(j)
    sources = {j.case.measurement.source for j in rows}
    if len(rows) < AT_SCALE_MIN_ROWS or len(sources) < AT_SCALE_MIN_SOURCES:
        return None
    ratios = [1 + j.row.error for j in rows]  # predicted / measured busbw
    optimistic = sum(r > 1 for r in ratios)
    median = statistics.median(ratios)
    return ScaleCaveat(len(rows), len(sources), optimistic, median, min(ratios), max(ratios))


def _fmt(value: float, latency: bool) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.2f}x" if latency else f"{value * 100:.1f}%"


def render_bands(bands: Sequence[Band]) -> str:
    head = (
        f"{'size band':<12}{'scope':<13}{'collective':<15}{'rows':>5}{'fit':>4} | "
        f"{'held-out med':>12}{'worst':>8} | {'fitted med':>10}{'worst':>8} | {'all med':>8}"
        f"{'worst':>8}  target"
    )
    lines = [head, "-" * len(head)]
    for b in bands:
        n, med, worst = b.stats()
        _, hmed, hworst = b.stats(False)
        fn, fmed, fworst = b.stats(True)
        lat = b.latency
        lines.append(
            f"{b.size:<12}{b.scope:<13}{b.collective:<15}{n:>5}{fn:>4} | "
            f"{_fmt(hmed, lat):>12}{_fmt(hworst, lat):>8} | {_fmt(fmed, lat):>10}"
            f"{_fmt(fworst, lat):>8} | {_fmt(med, lat):>8}{_fmt(worst, lat):>8}  "
            f"{'met' if b.meets_targets() else 'MISSED'}"
        )
    return "\n".join(lines)


def render_rows(judged: Iterable[Judged]) -> str:
    lines = [
        f"{'id':<22}{'fabric':<13}{'collective':<15}{'size (B)':>12}{'ranks':>6} "
        f"{'meas us':>11}{'pred us':>11}{'meas GB/s':>10}{'pred GB/s':>10}{'error':>9}  source"
    ]
    for j in judged:
        m, r = j.case.measurement, j.row
        mark = " [calibration]" if j.case.calibration else ""
        lines.append(
            f"{j.case.id[:21]:<22}{j.case.fabric:<13}{m.collective.value:<15}{m.size_bytes:>12}"
            f"{m.nodes * m.gpus_per_node:>6} {m.time_us:>11.2f}{r.predicted_time_us:>11.2f}"
            f"{m.busbw_gb_per_s:>10.1f}{r.predicted_busbw_gb_per_s:>10.1f}"
            f"{_fmt(j.score, j.latency):>9}  {m.source}{mark}"
        )
    return "\n".join(lines)


def render_references(cases: Iterable[Case], profiles: Mapping[str, FabricProfile]) -> str:
    """Reference rows, one line each; a run of more than :data:`REFERENCE_ROWS_PER_LINE` rows
    (a whole sweep kept for another use) is one line with the range of its time ratios."""
    groups: dict[tuple[str, str, str], list[Case]] = {}
    for c in cases:
        if c.reference:
            key = (c.id.split("@", 1)[0], c.reference, c.measurement.source)
            groups.setdefault(key, []).append(c)
    lines = ["reference rows (printed, not judged):"]
    for (run, reason, source), found in groups.items():
        rows = [(c, predict(profiles[c.fabric], c.measurement)) for c in found]
        if len(rows) <= REFERENCE_ROWS_PER_LINE:
            lines += [
                f"  {c.id}: measured {c.measurement.time_us:.2f} us, predicted "
                f"{row.predicted_time_us:.2f} us: {reason} [{source}]"
                for c, row in rows
            ]
            continue
        ratios = [c.measurement.time_us / row.predicted_time_us for c, row in rows]
        sizes = [c.measurement.size_bytes for c in found]
        lines.append(
            f"  {run} ({len(rows)} rows, {min(sizes)}-{max(sizes)} B): measured / predicted time"
            f" {min(ratios):.2f}x to {max(ratios):.2f}x: {reason} [{source}]"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Transfer:
    """Rows of ``what`` predicted by a profile fitted without them."""

    fabric: str
    what: str
    fitted_rows: int
    judged: tuple[Judged, ...]

    def stats(self) -> tuple[int, float, float, int, float]:
        """Bandwidth rows: count, median, worst |error|; latency rows: count, worst ratio."""
        bw = [j.score for j in self.judged if not j.latency]
        lat = [j.score for j in self.judged if j.latency]
        median = statistics.median(bw) if bw else math.nan
        return len(bw), median, max(bw, default=math.nan), len(lat), max(lat, default=math.nan)


def _refit(
    base: FabricProfile, train: Sequence[Case], test: Sequence[Case], fabric: str, what: str
) -> Transfer | None:
    if not train or not test:
        return None
    fitted = fit_profile(base, [c.measurement for c in train]).profile
    return Transfer(fabric, what, len(train), tuple(judge(test, {fabric: fitted})))


def _by_fabric(cases: Iterable[Case]) -> dict[str, list[Case]]:
    found: dict[str, list[Case]] = {}
    for c in cases:
        if not c.reference:
            found.setdefault(c.fabric, []).append(c)
    return found


def leave_one_source_out(
    cases: Iterable[Case], presets: Mapping[str, FabricProfile]
) -> list[Transfer]:
    """Per preset and calibration source: refit the preset's calibration rows without that
    source, then predict every row of the source."""
    out = []
    for fabric, rows in sorted(_by_fabric(cases).items()):
        calibration = [c for c in rows if c.calibration]
        for source in sorted({c.measurement.source for c in calibration}):
            train = [c for c in calibration if c.measurement.source != source]
            test = [c for c in rows if c.measurement.source == source]
            found = _refit(presets[fabric], train, test, fabric, source)
            if found:
                out.append(found)
    return out


def small_to_large(
    cases: Iterable[Case],
    presets: Mapping[str, FabricProfile],
    *,
    keep: Callable[[Case], bool] = lambda c: True,
) -> list[Transfer]:
    """Per preset: fit on every row spanning <= 4 domains, predict the rows spanning >= 8."""
    out = []
    for fabric, rows in sorted(_by_fabric(c for c in cases if keep(c)).items()):
        profile = presets[fabric]
        small = [c for c in rows if domains_of(c.measurement, profile) <= 4]
        large = [c for c in rows if domains_of(c.measurement, profile) >= 8]
        found = _refit(profile, small, large, fabric, "fit <=4 domains, predict >=8")
        if found:
            out.append(found)
    return out


def render_transfers(title: str, transfers: Sequence[Transfer]) -> str:
    lines = [title]
    for t in transfers:
        n, med, worst, n_lat, worst_lat = t.stats()
        lines.append(
            f"  {t.fabric:<13}{t.what[:58]:<60}fit on {t.fitted_rows:>4} | predicted {n:>4} "
            f"bandwidth rows: median {_fmt(med, False)}, worst {_fmt(worst, False)}; "
            f"{n_lat} latency rows: worst {_fmt(worst_lat, True)}"
        )
    if not transfers:
        lines.append("  (no preset has rows for this split)")
    return "\n".join(lines)
