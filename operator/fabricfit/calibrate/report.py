"""What ``fabricfit calibrate`` prints about a fit (pure): the NCCL environment the rows were
priced in, each row against its prediction (held-out rows marked), every fittable field with its
base and fitted value (or why it was kept), and the fields that ended on a bound of their range.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from fabricfit.calibrate.fields import ALL_FIELDS
from fabricfit.calibrate.fit import FitResult, Measurement, predict
from fabricfit.calibrate.scale import ROWS_PER_RUN
from fabricfit.fabric.profiles import FabricProfile


def render_env(rows: Sequence[Measurement]) -> str | None:
    """One line naming the NCCL environments the rows were priced in, if any."""
    found = sorted({m.nccl_env for m in rows if m.nccl_env})
    if not found:
        return None
    shown_env = "; ".join(" ".join(f"{k}={v.removesuffix('.')}" for k, v in env) for env in found)
    return f"runs priced as made with {shown_env} (the profile keeps the base's NCCL set-up)"


def median_error(profile: FabricProfile, rows: Sequence[Measurement]) -> float:
    """Median |busbw error| of ``profile`` on ``rows`` (inf when it cannot price them)."""
    try:
        return statistics.median(abs(predict(profile, m).error) for m in rows)
    except (ValueError, ZeroDivisionError):
        return float("inf")


def render_table(result: FitResult) -> str:
    head = f"{'collective':<15}{'nodes':>8}{'size (B)':>17}"
    lines = [f"{head}{'measured':>11}{'predicted':>11}{'error':>9}"]
    for row in result.rows:
        m = row.measurement
        lines.append(
            f"{m.collective.value:<15}{f'{m.nodes}x{m.gpus_per_node}':>8}{m.size_bytes:>17,}"
            f"{m.busbw_gb_per_s:>11.2f}{row.predicted_busbw_gb_per_s:>11.2f}{row.error:>+9.1%}"
            f"{'' if row.fitted else '  held out'}"
        )
    lines.append(
        "busbw in GB/s, measured at the faster of out-of-place and in-place;"
        " error = predicted/measured - 1"
    )
    held = len(result.rows) - sum(r.fitted for r in result.rows)
    line = (
        f"fitted {len(result.rows) - held} rows: median |error| {result.median_abs_error:.1%}, "
        f"worst {result.worst_abs_error:.1%}"
    )
    if held:
        line += (
            f"; held out {held} rows (a fit takes at most {ROWS_PER_RUN} rows of a run): median"
            f" {result.held_out_median_abs_error:.1%}, worst {result.held_out_worst_abs_error:.1%}"
        )
    lines.append(line)
    return "\n".join(lines)


def render_fields(base: FabricProfile, result: FitResult) -> str:
    """Every fittable field: its base and fitted value, fitted or kept from the base (and why)."""
    kept = dict(result.kept_fields)
    names = (*result.fitted_fields, *kept)
    width = max((len(n) + 1 for n in names), default=24)
    lines = [f"{'field':<{width}}{base.name:>11}{'fitted':>11}"]
    for name in names:
        old, new = getattr(base, name), getattr(result.profile, name)
        how = f"kept: {kept[name]}" if name in kept else "fitted"
        lines.append(f"{name:<{width}}{old:>11.4g}{new:>11.4g}  {how}")
    return "\n".join(lines)


def render_bounds(result: FitResult) -> str | None:
    """One line naming the fitted fields that ended on a bound of their range, if any: the rows
    asked for more than the field can give, usually hardware the base does not have."""
    found = []
    for name in result.fitted_fields:
        value, spec = float(getattr(result.profile, name)), ALL_FIELDS[name]
        if value in (spec.low, spec.high):
            found.append(f"{name} {value:g} ({'lowest' if value == spec.low else 'highest'})")
    if not found:
        return None
    return (
        f"at a bound of their range: {', '.join(found)}: the rows ask for more than these fields"
        " can give; the base's hardware (NICs per node, NVLink) may not be the cluster's"
    )
