"""The cost model against published measurements, by regime (size × scope × collective).

Rows: ``tests/fixtures/cost/measurements.yaml`` (single published figures, each with its source)
and the nccl-tests logs listed in ``tests/fixtures/nccl-tests/SOURCES.yaml`` (full size sweeps); a
log's rows are priced with the NCCL release the log prints (else the manifest's ``nccl_version``).
Rows marked ``calibration`` are the ones the presets' numbers were fitted on; the table reports
held-out and fitted rows apart. Also printed: leave-one-source-out (refit a preset without one
source with ``fabricfit.calibrate.fit``, predict that source) and fit on ≤ 4 NVLink domains,
predict ≥ 8. ``--rows`` lists every row; ``--fit`` prints each preset refitted on its
calibration rows; ``--write-presets`` writes those fitted numbers into
``operator/fabricfit/fabric/profiles/presets/*.yaml`` (how the presets' fitted numbers are made);
``--write-regimes`` writes each regime's summary into the package
(``operator/fabricfit/calibrate/measured-accuracy.json``: ``fabricfit cost`` prints the one its
prediction falls in; a unit test fails while the file is stale). The
fit starts from the values in the file and runs to its fixpoint, so running it again changes
nothing; it fits only the fields the calibration rows constrain, and a field they do not
constrain that an earlier fit moved (its comment says so) goes back to its value before that
fit.
dgx-h200 is fitted on the dgx-h100 rows too (same NVLink4/NVSwitch and NICs); the tapered H100
presets (h100-leaf-spine-2to1, h100-rail-only) take dgx-h100's fitted numbers as they are; a
field whose comment reads "as ORIGIN (fitted there)" (the cloud machines' NVLink numbers: aws-p5,
gcp-a3-mega, azure-nd-h100-v5 from dgx-h100, gcp-a4 from dgx-b200, oci-bm-gpu4-8 from dgx-a100)
is written at ORIGIN's fit and held there when the preset's own rows are fitted.

``--write-regimes`` also writes each hardware family's table (``fabricfit cost`` judges a preset
on its family's rows only, ``fabricfit.calibrate.families``) and what the held-out rows at scale
(≥ 8 domains, 4–256 MiB) say, printed here as the ``at scale`` line.

Run: ``.venv/bin/python benchmarks/cost_accuracy.py [--rows] [--fit] [--write-presets]
[--write-regimes]``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

from fabricfit.calibrate import accuracy
from fabricfit.calibrate.families import ALSO_FIT_ON, COPY_FITTED_FROM, INHERITED
from fabricfit.calibrate.fields import FITTABLE, fittable_fields
from fabricfit.calibrate.fit import FitResult, Measurement, fit_to_fixpoint
from fabricfit.calibrate.published import build_document
from fabricfit.fabric.profiles import PRESETS, FabricProfile
from fabricfit_dev.dataset import load_cases, read_fixture

ROOT = Path(__file__).resolve().parent.parent
PRESET_DIR = ROOT / "operator" / "fabricfit" / "fabric" / "profiles" / "presets"
REGIMES_FILE = ROOT / "operator" / "fabricfit" / "calibrate" / "measured-accuracy.json"

DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(FabricProfile)}
# How a preset line says its value was fitted: "(was OLD: why)" or "(default OLD)" follows.
# Which presets share fitted numbers (ALSO_FIT_ON: fitted on another's rows as well;
# COPY_FITTED_FROM: take all of another's fitted numbers; INHERITED: a field commented
# "# as ORIGIN (fitted there)", written at ORIGIN's fit and held there) is
# fabricfit.calibrate.families, which also says whose rows judge each preset.
FITTED = "# fitted on the [calibration] rows"
# A field whose comment starts "# held:" is a number measured elsewhere (its comment cites it):
# the preset's own rows never move it.
HELD = re.compile(r"^(?P<name>[a-z0-9_]+):[^#\n]*# held: ", re.M)
ORIGINS = frozenset(
    found["origin"]
    for path in PRESET_DIR.glob("*.yaml")
    for found in INHERITED.finditer(path.read_text(encoding="utf-8"))
)


def fit_presets(cases: list[accuracy.Case]) -> dict[str, FitResult]:
    """Each GPU preset refitted on its calibration rows (and those of ALSO_FIT_ON), the presets
    others inherit from first; a preset starts from the numbers it inherits (``_inherited``)
    and holds them and its ``# held:`` fields (``_held``)."""
    results: dict[str, FitResult] = {}
    origins_first = sorted(PRESETS, key=lambda name: (name not in ORIGINS, name))
    for fabric, preset in ((name, PRESETS[name]) for name in origins_first):
        fabrics = (fabric, *ALSO_FIT_ON.get(fabric, ()))
        rows = [c.measurement for c in cases if c.calibration and c.fabric in fabrics]
        if rows and not preset.is_torus:
            text = _preset_text(fabric)
            start = dataclasses.replace(preset, **_inherited(text, results))
            results[fabric] = _fit_unfitting(start, rows, text, hold=_held(text, results))
    return results


def _held(text: str, results: dict[str, FitResult]) -> frozenset[str]:
    """Fields a preset's own fit leaves alone: inherited ones and those marked ``# held:``."""
    return frozenset(_inherited(text, results)) | {found["name"] for found in HELD.finditer(text)}


def _inherited(text: str, results: dict[str, FitResult]) -> dict[str, Any]:
    """The fields a preset file takes from another preset's fit (``# as ORIGIN (fitted
    there)``), at that preset's value in ``results``."""
    values: dict[str, Any] = {}
    for found in INHERITED.finditer(text):
        origin = results.get(found["origin"])
        if origin is not None:
            values[found["name"]] = getattr(origin.profile, found["name"])
    return values


def write_inherited(results: dict[str, FitResult]) -> None:
    """Write each inherited field (``_inherited``) of every preset file at its origin's fitted
    value, keeping the comment: one HGX board, one set of NVLink numbers (the preset's own fit
    holds these fields, ``fit_presets``)."""
    for path in sorted(PRESET_DIR.glob("*.yaml")):
        text = before = path.read_text(encoding="utf-8")
        values = _inherited(text, results)
        for name, value in values.items():
            text = _with_value(text, name, value)
        if text != before:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)} (inherited: {', '.join(sorted(values))})")


def _fit_unfitting(
    preset: FabricProfile, rows: list[Measurement], text: str, hold: frozenset[str] = frozenset()
) -> FitResult:
    """Fit ``preset`` to its fixpoint; a field the rows do not constrain but an earlier fit moved
    goes back to its value before that fit (the file's comment), and the fit runs again from
    there (restoring one field can leave another unconstrained)."""
    result = fit_to_fixpoint(preset, rows, name=preset.name, hold=hold)
    for _ in range(len(FITTABLE)):
        restored: dict[str, Any] = {}
        for name, _ in result.kept_fields:
            value = _unfitted(text, name)
            if value is not None and value != getattr(result.profile, name):
                restored[name] = value
        if not restored:
            break
        base = dataclasses.replace(result.profile, sources=preset.sources, **restored)
        result = fit_to_fixpoint(base, rows, name=preset.name, hold=hold)
    return result


def _unfitted(text: str, name: str) -> float | None:
    """The value a preset field had before a fit moved it, when its comment says one did."""
    found = _field_line(name).search(text)
    comment = (found.group("comment") if found else None) or ""
    was = re.fullmatch(rf"{re.escape(FITTED)} \((?:was|default) (?P<old>[^:)]+).*\)", comment)
    return float(was["old"]) if was else None


def print_fits(results: dict[str, FitResult]) -> None:
    for fabric, result in results.items():
        print(
            f"# {fabric}: fitted on {len(result.rows)} calibration rows, median "
            f"{result.median_abs_error:.1%}, worst {result.worst_abs_error:.1%}"
        )
        kept = dict(result.kept_fields)
        for name in fittable_fields(result.profile):
            why = f"  # kept: {kept[name]}" if name in kept else ""
            print(f"{name}: {getattr(result.profile, name)}{why}")


def write_presets(results: dict[str, FitResult]) -> None:
    """Replace the fitted fields' values in the preset YAML files, keeping their comments. A field
    the rows do not constrain keeps its value, or, when an earlier fit moved it (its comment says
    so), goes back to the value it had before that fit: no row supports the fitted one."""
    held = {fabric: _held(_preset_text(fabric), results) for fabric in results}
    for fabric, result in results.items():
        path = PRESET_DIR / f"{fabric}.yaml"
        text = path.read_text(encoding="utf-8")
        hold = held[fabric]
        for name in result.fitted_fields:
            text = _write_fitted(text, name, getattr(result.profile, name))
        for name, _ in result.kept_fields:
            if getattr(result.profile, name) == _unfitted(text, name):
                text = _restore_unfitted(text, name)
        used = sorted({r.measurement.source for r in result.rows if r.fitted})
        note = "; ".join(used).replace('"', "'")
        kept = ", ".join(n for n, why in result.kept_fields if n not in hold) or "none"
        kept_held = ", ".join(n for n, _ in result.kept_fields if n in hold)
        held_note = f"; held (inherited or measured elsewhere): {kept_held}" if kept_held else ""
        text = re.sub(r'^  - "fitted: .*\n', "", text, flags=re.M).rstrip("\n")
        text += (
            f'\n  - "fitted: {", ".join(result.fitted_fields) or "none"} by'
            f" fabricfit.calibrate.fit on {len(result.rows)} [calibration] rows of tests/fixtures"
            f" (cost/measurements.yaml, nccl-tests/SOURCES.yaml): {note}; kept (no row constrains"
            f" them): {kept}{held_note}"
            '"\n'
        )
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")


def _preset_text(fabric: str) -> str:
    return (PRESET_DIR / f"{fabric}.yaml").read_text(encoding="utf-8")


def _field_line(name: str) -> re.Pattern[str]:
    return re.compile(rf"^{name}:[ ]*[^#\n]*?(?P<pad>[ ]*)(?P<comment>#.*)?$", re.M)


def _write_fitted(text: str, name: str, value: float) -> str:
    found = _field_line(name).search(text)
    if not found:
        default = DEFAULTS[name]
        comment = f"# fitted on the [calibration] rows (default {default})"
        if value == default:
            comment = "# default: not constrained by the [calibration] rows"
        return text.replace("\nsources:", f"\n{_line(name, value, comment)}\nsources:", 1)
    old = found.group(0).split("#")[0].split(":", 1)[1].strip()
    comment = found.group("comment")
    if float(old) != value and not (comment or "").startswith(FITTED):
        was = (comment or "").lstrip("# ")
        comment = f"{FITTED} (was {old}: {was})"
    return text[: found.start()] + _line(name, value, comment) + text[found.end() :]


def _restore_unfitted(text: str, name: str) -> str:
    found = _field_line(name).search(text)
    if not found:
        value = DEFAULTS[name]
        comment = "# default: not constrained by the [calibration] rows"
        return text.replace("\nsources:", f"\n{_line(name, value, comment)}\nsources:", 1)
    comment = found.group("comment") or ""
    was = re.fullmatch(rf"{re.escape(FITTED)} \(was (?P<old>[^:]+): ?(?P<why>.*)\)", comment)
    default = re.fullmatch(rf"{re.escape(FITTED)} \(default (?P<old>[^)]+)\)", comment)
    if was:
        line = _line(name, float(was["old"]), f"# {was['why']}" if was["why"] else None)
    elif default:
        line = _line(
            name, float(default["old"]), "# default: not constrained by the [calibration] rows"
        )
    else:
        return text
    return text[: found.start()] + line + text[found.end() :]


def copy_fitted(results: dict[str, FitResult]) -> None:
    """Write the source preset's fitted values into the presets of COPY_FITTED_FROM, keeping
    their comments (a field they do not list yet is added, saying where it comes from)."""
    for fabric, origin in COPY_FITTED_FROM.items():
        if origin not in results:
            continue
        fitted = results[origin].profile
        path = PRESET_DIR / f"{fabric}.yaml"
        text = path.read_text(encoding="utf-8")
        for name in fittable_fields(fitted):
            text = _with_value(text, name, getattr(fitted, name), f"# as {origin} (fitted there)")
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)} (fitted numbers of {origin})")


def _with_value(text: str, name: str, value: float, comment: str = "") -> str:
    """``text`` with field ``name`` at ``value``, its comment kept; a field the file does not
    list yet is added before ``sources`` with ``comment``."""
    found = _field_line(name).search(text)
    if found is None:
        return text.replace("\nsources:", f"\n{_line(name, value, comment)}\nsources:", 1)
    new = _line(name, value, found.group("comment"))
    return text[: found.start()] + new + text[found.end() :]


def _line(name: str, value: float, comment: str | None) -> str:
    return f"{name + ': ' + str(value):<29} {comment or ''}".rstrip()


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/cost_accuracy.py",
        description="the cost model against published measurements, by regime",
    )
    parser.add_argument("--rows", action="store_true", help="list every row with its source")
    parser.add_argument(
        "--fit", action="store_true", help="print each preset refitted on its calibration rows"
    )
    parser.add_argument(
        "--write-presets",
        action="store_true",
        help="write the refitted numbers into operator/fabricfit/fabric/profiles/presets/*.yaml",
    )
    parser.add_argument(
        "--write-regimes",
        action="store_true",
        help=f"write each regime's accuracy into {REGIMES_FILE.relative_to(ROOT)}",
    )

    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = _args(argv)
    cases = load_cases(read_fixture, PRESETS)
    judged = accuracy.judge([c for c in cases if not c.reference], PRESETS)
    bands = accuracy.band_table(judged, PRESETS)
    fitted = sum(c.calibration for c in cases)
    print(f"{len(judged)} rows ({fitted} fitted [calibration], {len(judged) - fitted} held out)")
    print(accuracy.render_bands(bands))
    if args.rows:
        print(accuracy.render_rows(judged))
    print(accuracy.render_references(cases, PRESETS))
    print(
        accuracy.render_transfers(
            "leave one source out:", accuracy.leave_one_source_out(cases, PRESETS)
        )
    )
    print(accuracy.render_transfers("small to large:", accuracy.small_to_large(cases, PRESETS)))
    caveat = accuracy.scale_caveat(judged, PRESETS)
    print(f"at scale: {caveat.describe() if caveat else 'too few held-out rows for a figure'}")
    if args.write_regimes:
        doc = build_document(judged, PRESETS)
        REGIMES_FILE.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {REGIMES_FILE.relative_to(ROOT)}")
    if args.fit or args.write_presets:
        results = fit_presets(cases)
        print_fits(results)
        if args.write_presets:
            write_inherited(results)
            write_presets(results)
            copy_fitted(results)
    return 0 if all(b.meets_targets() for b in bands) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
