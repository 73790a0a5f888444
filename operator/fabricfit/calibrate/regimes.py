"""The regimes the cost model's accuracy is reported by, and how right it was in each (pure).

A regime is a size band (≤ 64 KiB, 64 KiB–16 MiB, 16–256 MiB, ≥ 256 MiB per rank) × a scope
(NVLink domains spanned: one, 2–4, 5–7, ≥ 8; TPU rows apart) × a collective. The accuracy report
(:mod:`fabricfit.calibrate.accuracy`) groups the published measurements by regime; a
:class:`RegimeAccuracy` is one regime's summary: how many rows, how many the presets were fitted
on, and the median and worst error — |busbw error| above 64 KiB, the time ratio max(p/m, m/p) at
and below. ``fabricfit cost`` prints the summary of the regime its prediction falls in, from
the document :func:`accuracy_document` builds (``benchmarks/cost_accuracy.py --write-regimes``
writes it into the package; a unit test checks it against a fresh computation).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fabricfit.calibrate.fields import LATENCY_MAX_BYTES
from fabricfit.fabric.profiles import FabricProfile

MIB = 1 << 20
SIZE_BANDS = ("<=64KiB", "64KiB-16MiB", "16-256MiB", ">=256MiB")
SCOPES = ("1 domain", "2-4 domains", "5-7 domains", ">=8 domains", "tpu")
# Targets (judged on the printed table, held-out rows included).
TARGET_MEDIAN, TARGET_WORST, TARGET_LATENCY_RATIO = 0.10, 0.30, 1.5
BUSBW_ERROR, TIME_RATIO = "busbw_error", "time_ratio"
DOCUMENT_KIND = "fabricfit-measured-accuracy"


def size_band(size_bytes: int) -> str:
    if size_bytes <= LATENCY_MAX_BYTES:
        return SIZE_BANDS[0]
    if size_bytes <= 16 * MIB:
        return SIZE_BANDS[1]
    return SIZE_BANDS[2] if size_bytes < 256 * MIB else SIZE_BANDS[3]


def domains_spanned(nodes: int, profile: FabricProfile, nodes_per_domain: int | None = None) -> int:
    """NVLink domains ``nodes`` nodes span, packed in order (``nodes_per_domain``: a run's own
    partition size; default the profile's domain)."""
    per_domain = nodes_per_domain or profile.nodes_per_nvlink_domain
    return -(-nodes // per_domain)


def scope(domains: int, profile: FabricProfile) -> str:
    """The scope of a group spanning ``domains`` NVLink domains; a TPU torus is its own."""
    if profile.is_torus:
        return SCOPES[4]
    if domains == 1:
        return SCOPES[0]
    return SCOPES[1] if domains <= 4 else SCOPES[2] if domains < 8 else SCOPES[3]


@dataclass(frozen=True)
class RegimeAccuracy:
    """How right the model was on the published rows of one regime. ``median``/``worst`` are
    fractions (0.085 = 8.5 %) for ``busbw_error``, ratios ≥ 1 for ``time_ratio``; the held-out
    figures are NaN when every row was fitted."""

    size_band: str
    scope: str
    collective: str
    rows: int
    fitted_rows: int
    median: float
    worst: float
    held_out_median: float
    held_out_worst: float

    @property
    def metric(self) -> str:
        return TIME_RATIO if self.size_band == SIZE_BANDS[0] else BUSBW_ERROR

    @property
    def meets_targets(self) -> bool:
        if self.metric == TIME_RATIO:
            return self.worst <= TARGET_LATENCY_RATIO
        return self.worst <= TARGET_WORST and (self.rows < 3 or self.median <= TARGET_MEDIAN)

    def record(self) -> dict[str, Any]:
        """The JSON form (``fabricfit cost --json``'s ``accuracy``; NaN becomes null)."""
        return {
            "size_band": self.size_band,
            "scope": self.scope,
            "collective": self.collective,
            "metric": self.metric,
            "rows": self.rows,
            "fitted_rows": self.fitted_rows,
            "median": _number(self.median),
            "worst": _number(self.worst),
            "held_out_median": _number(self.held_out_median),
            "held_out_worst": _number(self.held_out_worst),
            "meets_targets": self.meets_targets,
        }

    def describe(self) -> str:
        """One line: the regime, its median and worst error and the rows behind them."""
        if self.metric == TIME_RATIO:
            what, med, worst = "time ratio", f"{self.median:.2f}x", f"{self.worst:.2f}x"
        else:
            what, med, worst = "busbw error", f"{self.median:.1%}", f"{self.worst:.1%}"
        rows = "row" if self.rows == 1 else "rows"
        return (
            f"{what} median {med}, worst {worst} over {self.rows} published {rows} "
            f"({self.fitted_rows} fitted) in this regime ({self.size_band}, {self.scope}, "
            f"{self.collective}){'' if self.meets_targets else '; targets MISSED'}"
        )


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def accuracy_document(regimes: Iterable[RegimeAccuracy], rows: int) -> dict[str, Any]:
    """The document ``fabricfit cost`` reads: every regime with published rows."""
    return {
        "kind": DOCUMENT_KIND,
        "generated_by": "benchmarks/cost_accuracy.py --write-regimes",
        "rows": rows,
        "regimes": [r.record() for r in regimes],
    }


def parse_accuracy_document(doc: Any) -> dict[tuple[str, str, str], RegimeAccuracy]:
    """Regimes by (size band, scope, collective); ValueError on a document of another shape."""
    if not isinstance(doc, Mapping) or doc.get("kind") != DOCUMENT_KIND:
        raise ValueError(f"not a {DOCUMENT_KIND} document")
    found = {}
    for item in doc.get("regimes", []):
        r = RegimeAccuracy(
            str(item["size_band"]),
            str(item["scope"]),
            str(item["collective"]),
            int(item["rows"]),
            int(item["fitted_rows"]),
            *(_float(item[k]) for k in ("median", "worst", "held_out_median", "held_out_worst")),
        )
        found[(r.size_band, r.scope, r.collective)] = r
    return found


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)
