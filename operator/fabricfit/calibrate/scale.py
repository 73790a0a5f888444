"""A cluster's calibration across node counts: which rows the fit takes, how its error changes
with scale, fitted and held out (pure).

Theory of operation
-------------------
``fabricfit calibrate`` fits one profile to runs at several node counts of one cluster, with the
scale terms (``fields.SCALE_FITTABLE``) on top of the flat fields: the decay of scale-out
bandwidth with the domains a group spans, and the switch hops and taper of leaving a rail
group; the structure the model already has (ring steps linear in ranks, tree levels in log2 of
the domains, NCCL's per-node-count caps) carries the rest. Then it says how right that is at
each node count twice (:func:`by_node_count`):

* **fitted**: the rows of that node count, predicted by the profile fitted on every node count;
* **held out**: the same rows, predicted by a profile fitted *without* that node count's runs
  (leave one node count out; with more than :data:`MAX_FOLDS` node counts they are dealt into
  that many folds), which is what a prediction at a node count nobody measured is worth.

A run contributes at most :data:`ROWS_PER_RUN` rows to a fit, spread evenly over log size (the
smallest and largest always), and a fit takes at most :data:`MAX_FIT_ROWS`: a dense sweep of
1,024 sizes says no more about a latency and a bandwidth than 16 of them do, and costs 64 times
as much to fit (one fit prices every row some 1,500 times). The other rows are predicted and
reported as held out (:func:`split_rows`).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.calibrate.fit import FitResult, FitRow, Measurement, fit_profile, shape_of
from fabricfit.fabric.profiles import FabricProfile

ROWS_PER_RUN = 16
MIN_ROWS_PER_RUN = 4
MAX_FIT_ROWS = 192
MAX_FOLDS = 8

_RunKey = tuple[object, ...]


def run_key(m: Measurement) -> _RunKey:
    """The rows of one run: one log's collective on one layout in one NCCL set-up."""
    return (m.source, m.collective, m.nodes, m.gpus_per_node, m.gpus_per_thread, m.nccl_env)


def split_rows(
    rows: Sequence[Measurement], *, per_run: int = ROWS_PER_RUN, total: int = MAX_FIT_ROWS
) -> tuple[list[Measurement], list[Measurement]]:
    """(rows to fit, rows to hold out): at most ``per_run`` rows of each run (fewer when the runs
    together would pass ``total``, never under :data:`MIN_ROWS_PER_RUN`), spread evenly over
    log size; the order of ``rows`` is kept."""
    runs: dict[_RunKey, list[int]] = {}
    for i, m in enumerate(rows):
        runs.setdefault(run_key(m), []).append(i)
    cap = max(MIN_ROWS_PER_RUN, min(per_run, total // max(1, len(runs))))
    chosen: set[int] = set()
    for indices in runs.values():
        chosen.update(_spread([rows[i].size_bytes for i in indices], indices, cap))
    fit = [m for i, m in enumerate(rows) if i in chosen]
    held = [m for i, m in enumerate(rows) if i not in chosen]
    return fit, held


def _spread(sizes: list[int], indices: list[int], cap: int) -> list[int]:
    """``cap`` of ``indices`` whose sizes lie closest to evenly spaced points in log size."""
    if len(indices) <= cap:
        return indices
    order = sorted(range(len(sizes)), key=lambda k: sizes[k])
    logs = [math.log(sizes[k]) for k in order]
    free = list(range(len(order)))
    picked = []
    for step in range(cap):
        target = logs[0] + (logs[-1] - logs[0]) * step / (cap - 1)
        at = bisect.bisect_left([logs[k] for k in free], target)
        near = min(
            (free[j] for j in (at - 1, at) if 0 <= j < len(free)),
            key=lambda k: abs(logs[k] - target),
        )
        free.remove(near)
        picked.append(indices[order[near]])
    return picked


@dataclass(frozen=True)
class NodeCountError:
    """How right the calibration is at one node count: |busbw error| of its rows, fitted on
    every node count and held out (fitted without this one); NaN where there is none."""

    nodes: int
    gpus_per_node: int
    rows: int
    fitted_median: float
    fitted_worst: float
    held_out_median: float = math.nan
    held_out_worst: float = math.nan

    @property
    def label(self) -> str:
        return f"{self.nodes}x{self.gpus_per_node}"


def _layout(m: Measurement) -> tuple[int, int]:
    return (m.nodes, m.gpus_per_node)


def _stats(rows: Sequence[FitRow]) -> tuple[float, float]:
    errors = [abs(r.error) for r in rows]
    return (statistics.median(errors), max(errors)) if errors else (math.nan, math.nan)


def folds(layouts: Sequence[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Node counts to leave out together: one each, or dealt into :data:`MAX_FOLDS` folds."""
    ordered = sorted(set(layouts))
    if len(ordered) <= MAX_FOLDS:
        return [[k] for k in ordered]
    return [ordered[i::MAX_FOLDS] for i in range(MAX_FOLDS)]


def by_node_count(
    base: FabricProfile,
    fit_rows: Sequence[Measurement],
    held_rows: Sequence[Measurement],
    result: FitResult,
) -> list[NodeCountError]:
    """The error at each node count of ``result`` (fitted on ``fit_rows``, every node count),
    and, with two or more node counts, of a fit from ``base`` without that node count's rows."""
    layouts = sorted({_layout(m) for m in (*fit_rows, *held_rows)})
    held_out: dict[tuple[int, int], list[FitRow]] = {}
    if len(layouts) > 1:
        for fold in folds(layouts):
            train = [m for m in fit_rows if _layout(m) not in fold]
            test = [m for m in (*fit_rows, *held_rows) if _layout(m) in fold]
            if not train:
                continue
            out = fit_profile(base, train, held_out=test, name=base.name, scale=True)
            for row in out.rows:
                if not row.fitted:
                    held_out.setdefault(_layout(row.measurement), []).append(row)
    found = []
    for key in layouts:
        mine = [r for r in result.rows if _layout(r.measurement) == key]
        fitted = _stats(mine)
        held = _stats(held_out.get(key, []))
        found.append(NodeCountError(key[0], key[1], len(mine), *fitted, *held))
    return found


def render_node_counts(errors: Sequence[NodeCountError]) -> str:
    head = (
        f"{'nodes':>8}{'rows':>6} | {'fitted median':>13}{'worst':>8} |"
        f" {'held-out median':>15}{'worst':>8}"
    )
    lines = [
        "error by node count (|busbw error|; fitted: the profile fitted on every node count;"
        " held out: fitted without that node count's runs)",
        head,
    ]
    for e in errors:
        lines.append(
            f"{e.label:>8}{e.rows:>6} | {_pct(e.fitted_median):>13}{_pct(e.fitted_worst):>8} |"
            f" {_pct(e.held_out_median):>15}{_pct(e.held_out_worst):>8}"
        )
    return "\n".join(lines)


def _pct(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1%}"


def _inner(why: str) -> str:
    """``why`` without the "no row constrains it (...)" around it."""
    start, end = why.find("("), why.rfind(")")
    return why[start + 1 : end] if 0 <= start < end else why


def describe_scale(profile: FabricProfile, result: FitResult, rows: Sequence[Measurement]) -> str:
    """One line: how the fitted profile's scale-out changes with the domains the runs span, and
    what leaving a rail group costs (or why the rows could not tell)."""
    kept = {name: _inner(why) for name, why in result.kept_fields}
    domains = sorted({shape_of(m, profile).domains for m in rows} - {0, 1, 2})
    decay = profile.scaleout_decay
    if "scaleout_decay" in kept:
        first = f"scale-out bandwidth kept flat with domains: {kept['scaleout_decay']}"
    else:
        factors = ", ".join(f"x{(2 / d) ** decay:.2f} at {d}" for d in domains[:4])
        first = f"scale-out bandwidth x (2/domains)^{decay:g} beyond 2 domains ({factors})"
    group = profile.nodes_per_rail_group
    if "switch_hop_latency_us" in kept:
        second = f"rail group of {group} nodes kept: {kept['switch_hop_latency_us']}"
    else:
        second = (
            f"leaving the rail group of {group} nodes: +{profile.switch_hop_latency_us:g} us per"
            f" switch hop, bandwidth / {profile.leaf_oversubscription:g}"
        )
    return f"scale: {first}; {second}"
