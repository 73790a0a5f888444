"""The cost model against published measurements, by regime (size × scope × collective).

Rows: ``tests/fixtures/cost/measurements.yaml`` (single published figures, each with its source)
and the nccl-tests logs listed in ``tests/fixtures/nccl-tests/SOURCES.yaml`` (full size sweeps).
Rows marked ``calibration`` are the ones the presets' numbers were fitted on; the table reports
held-out and fitted rows apart. Also printed: leave-one-source-out (refit a preset without one
source with ``fabricfit.calibrate.fit``, predict that source) and fit on ≤ 4 NVLink domains,
predict ≥ 8. ``--rows`` lists every row; ``--fit`` prints each preset refitted on its
calibration rows (the numbers the preset YAML files carry).

Run: ``.venv/bin/python benchmarks/cost_accuracy.py [--rows] [--fit]``
"""

from __future__ import annotations

import sys
from pathlib import Path

from fabricfit.calibrate import accuracy
from fabricfit.calibrate.dataset import load_cases
from fabricfit.calibrate.fit import FITTABLE, fit_profile
from fabricfit.fabric.profiles import PRESETS

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def _read(relative: str) -> str:
    return (FIXTURES / relative).read_text(encoding="utf-8")


def print_fits(cases: list[accuracy.Case]) -> None:
    for fabric in sorted({c.fabric for c in cases if c.calibration}):
        rows = [c.measurement for c in cases if c.fabric == fabric and c.calibration]
        result = fit_profile(PRESETS[fabric], rows)
        print(f"# {fabric}: fitted on {len(rows)} rows, median {result.median_abs_error:.1%}")
        for name in FITTABLE:
            print(f"{name}: {getattr(result.profile, name)}")


def main(argv: list[str]) -> int:
    cases = load_cases(_read)
    judged = accuracy.judge([c for c in cases if not c.reference], PRESETS)
    bands = accuracy.band_table(judged, PRESETS)
    fitted = sum(c.calibration for c in cases)
    print(f"{len(judged)} rows ({fitted} fitted [calibration], {len(judged) - fitted} held out)")
    print(accuracy.render_bands(bands))
    if "--rows" in argv:
        print(accuracy.render_rows(judged))
    print(accuracy.render_references(cases, PRESETS))
    print(
        accuracy.render_transfers(
            "leave one source out:", accuracy.leave_one_source_out(cases, PRESETS)
        )
    )
    print(accuracy.render_transfers("small to large:", accuracy.small_to_large(cases, PRESETS)))
    if "--fit" in argv:
        print_fits(cases)
    return 0 if all(b.meets_targets() for b in bands) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
