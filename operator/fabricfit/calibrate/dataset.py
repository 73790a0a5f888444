"""The measured rows the accuracy report and the presets' fit run on (pure: the caller reads).

Two fixtures feed it: ``cost/measurements.yaml`` (single published figures, one mapping per row,
each with its source) and ``nccl-tests/SOURCES.yaml``, the manifest of published nccl-tests logs
(each entry names its log file, source, preset and layout; every out-of-place row of the log
becomes a case). ``read`` maps a path relative to the fixtures directory to its text and raises
FileNotFoundError for a fixture that does not exist (yet).
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

import yaml

from fabricfit.calibrate.accuracy import Case, parse_cases
from fabricfit.calibrate.fit import Measurement, measurements_from_log
from fabricfit.cost.collectives import Collective
from fabricfit.fabric.profiles import PRESETS

MEASUREMENTS = "cost/measurements.yaml"
MANIFEST = "nccl-tests/SOURCES.yaml"


def load_cases(read: Callable[[str], str]) -> list[Case]:
    cases = parse_cases(yaml.safe_load(read(MEASUREMENTS)))
    try:
        manifest = yaml.safe_load(read(MANIFEST))
    except FileNotFoundError:
        return cases
    for entry in _entries(manifest):
        cases.extend(_log_cases(entry, read))
    return cases


def _entries(manifest: Any) -> list[Mapping[str, Any]]:
    if isinstance(manifest, Mapping):
        for key in ("logs", "files", "entries", "sources"):
            if isinstance(manifest.get(key), list):
                return [e for e in manifest[key] if isinstance(e, Mapping)]
        return []
    return [e for e in manifest or [] if isinstance(e, Mapping)]


def _log_cases(entry: Mapping[str, Any], read: Callable[[str], str]) -> list[Case]:
    # the parser module lands beside this one (calibrate.logs); imported late, by name
    parse_log = importlib.import_module("fabricfit.calibrate.logs").parse_log
    path = str(entry.get("file") or entry.get("path"))
    fabric = entry.get("fabric") or entry.get("preset")
    if not fabric or fabric not in PRESETS:  # a preset not in the catalog yet (cloud presets)
        return []
    named = entry.get("collective")  # for logs that do not print their test's name
    log = parse_log(read("nccl-tests/" + path), path, Collective(named) if named else None)
    source = str(entry.get("source", path))
    rows = measurements_from_log(
        log, nodes=entry.get("nodes"), gpus_per_node=entry.get("gpus_per_node"), source=source
    )
    stem = path.rsplit("/", 1)[-1].removesuffix(".log").removesuffix(".txt")
    return [
        Case(
            id=f"{stem}@{m.size_bytes}",
            fabric=str(fabric),
            measurement=_override(m, entry),
            calibration=bool(entry.get("calibration", False)),
            note=str(entry.get("note", "")),
            reference=str(entry.get("reference", "")),
        )
        for m in rows
    ]


def _override(m: Measurement, entry: Mapping[str, Any]) -> Measurement:
    return dataclasses.replace(
        m,
        algorithm=str(entry.get("algorithm", m.algorithm)),
        nodes_per_domain=entry.get("nodes_per_domain", m.nodes_per_domain),
    )
