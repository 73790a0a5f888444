"""The contention model against published measurements of jobs sharing links.

Run from the repository root::

    .venv/bin/python benchmarks/contention_accuracy.py          # the validation table
    .venv/bin/python benchmarks/contention_accuracy.py --fit    # fit the sharing efficiencies

Every row of ``tests/fixtures/contention/rows.yaml`` (sources: ``SOURCES.md`` there; the MCCS
trials in ``mccs.csv``, written by ``benchmarks/contention_data.py``) is priced by the
planner's own fair-share code (``fabricfit.contention.validation``) with the default fabric
profile's sharing efficiencies, and printed as measured against predicted slowdown (time
shared ÷ time alone), fitted rows first, then held-out rows, then rows measured on links the
model does not have. ``--fit`` fits the two efficiencies on the rows marked ``fit`` and prints
them next to the profile's defaults (they must agree: the defaults are this fit).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from fabricfit.contention.validation import (
    Efficiencies,
    Trials,
    fit_efficiencies,
    measured_slowdown,
    predicted_slowdown,
)
from fabricfit.fabric.profiles.profile import (
    FABRIC_SHARING_EFFICIENCY,
    NIC_SHARING_EFFICIENCY,
)

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "contention"
SPLITS = (
    ("fit", "Fitted rows (the sharing efficiencies are fitted on these)"),
    ("held-out", "Held-out rows"),
    ("outside", "Outside the model (links it does not have; listed, never fitted)"),
)
DEFAULTS = Efficiencies(nic=NIC_SHARING_EFFICIENCY, fabric=FABRIC_SHARING_EFFICIENCY)


def load_rows() -> list[dict[str, Any]]:
    document = yaml.safe_load((FIXTURES / "rows.yaml").read_text(encoding="utf-8"))
    rows: list[dict[str, Any]] = document["rows"]
    return rows


def load_trials() -> Trials:
    found: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    with (FIXTURES / "mccs.csv").open(encoding="utf-8") as stream:
        for line in csv.DictReader(stream):
            key = (line["file"].rsplit("/", 1)[-1], line["solution"], line["app"])
            found[key].append(float(line["busbw_gb_per_s"]))
    return found


def table(rows: Sequence[Mapping[str, Any]], trials: Trials, eff: Efficiencies) -> list[str]:
    lines = [f"sharing efficiency: NIC {eff.nic}, fabric {eff.fabric}"]
    for split, title in SPLITS:
        chosen = [r for r in rows if r["split"] == split]
        lines += ["", title, f"{'row':<5} {'source':<10} {'measured':>9} {'predicted':>9} "
                  f"{'error':>7}  set-up"]  # fmt: skip
        errors = []
        for row in chosen:
            measured = measured_slowdown(row, trials)
            predicted = predicted_slowdown(row, eff)
            error = predicted / measured - 1
            errors.append(math.log(predicted / measured))
            side = "optimistic" if error < -0.02 else "pessimistic" if error > 0.02 else ""
            lines.append(
                f"{row['id']:<5} {row['source']:<10} {measured:>8.2f}x {predicted:>8.2f}x "
                f"{error:>+7.1%}  {side + ': ' if side else ''}{row['setup'][:90]}"
            )
        if errors:
            typical = math.exp(math.sqrt(sum(e * e for e in errors) / len(errors))) - 1
            worst = max(errors, key=abs)
            lines.append(
                f"{len(errors)} rows: typical error {typical:.1%} (root mean square of "
                f"log ratios), worst {math.exp(worst) - 1:+.1%}"
            )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="fit the sharing efficiencies")
    args = parser.parse_args(argv)
    rows, trials = load_rows(), load_trials()
    if args.fit:
        fitted = fit_efficiencies(rows, trials, DEFAULTS)
        print(f"fitted:   NIC {fitted.nic}, fabric {fitted.fabric}")
        print(f"defaults: NIC {DEFAULTS.nic}, fabric {DEFAULTS.fabric}")
        return 0 if fitted == DEFAULTS else 1
    print("\n".join(table(rows, trials, DEFAULTS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
