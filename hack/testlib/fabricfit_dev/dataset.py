"""The measured rows the accuracy report and the presets' fit run on (pure: the caller reads).

Two fixtures feed it: ``cost/measurements.yaml`` (single published figures and short sweeps,
each with its source, plus ``calibration_logs``: which nccl-tests logs the presets are fitted
on; an entry may name ``max_bytes`` / ``min_bytes`` to fit only its rows up to / from that size,
and ``every: N`` to fit only every N-th row of the log in its order, the first included, so that
the rows between them stay held out) and ``nccl-tests/SOURCES.yaml``, the manifest of published
nccl-tests logs (each entry names its file, source, preset, layout, forced algorithm and a
quality note; every out-of-place row of the log becomes a case). Logs with a ``reference``
reason, or whose quality note says "use with care" or "degraded", are reference rows: printed
apart, never judged or fitted. ``read`` maps a path relative to the fixtures directory to its
text and raises FileNotFoundError for a fixture that does not exist; ``read_fixture`` is that map
for the repository's ``tests/fixtures``.

It lives in the test library, not in the package: the package never reads ``tests/`` (the rows
are the tests' and the benchmark's; the package ships only what they produce, the presets' fitted
numbers and ``calibrate/measured-accuracy.json``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Any

import yaml

from fabricfit.calibrate.accuracy import Case, parse_cases
from fabricfit.calibrate.fit import measurements_from_log, nccl_release_of
from fabricfit.calibrate.logs import parse_log
from fabricfit.cost.collectives import Collective
from fabricfit.fabric.profiles import PRESETS
from fabricfit_dev import paths

MEASUREMENTS = "cost/measurements.yaml"
MANIFEST = "nccl-tests/SOURCES.yaml"
_SUSPECT = ("use with care", "degraded")


def read_fixture(relative: str) -> str:
    """The text of ``tests/fixtures/<relative>``."""
    return (paths.FIXTURES / relative).read_text(encoding="utf-8")


def load_cases(read: Callable[[str], str], fabrics: Collection[str] | None = None) -> list[Case]:
    """Every case; with ``fabrics``, only those on these presets (others have no profile)."""
    doc = yaml.safe_load(read(MEASUREMENTS))
    cases = parse_cases(doc)
    calibration = _calibration_logs(doc.get("calibration_logs", []))
    try:
        manifest = yaml.safe_load(read(MANIFEST))
    except FileNotFoundError:
        manifest = None
    for entry in _entries(manifest):
        if fabrics is None or (entry.get("preset") or entry.get("fabric")) in fabrics:
            cases.extend(_log_cases(entry, read, calibration))
    return [c for c in cases if fabrics is None or c.fabric in fabrics]


@dataclasses.dataclass(frozen=True)
class Selection:
    """Which rows of a calibration log are fitted: every ``every``-th row in the log's order (the
    first included) that is at least ``min_bytes`` and at most ``max_bytes`` (None: any size)."""

    max_bytes: int | None = None
    every: int = 1
    min_bytes: int = 0

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"calibration log 'every' must be at least 1, got {self.every}")

    def fits(self, index: int, size: int) -> bool:
        inside = size >= self.min_bytes and (self.max_bytes is None or size <= self.max_bytes)
        return inside and index % self.every == 0


def _calibration_logs(entries: Any) -> dict[str, Selection]:
    """Calibration logs: a file name (every row) or ``{file, max_bytes?, min_bytes?, every?}``
    (its rows within those sizes, every N-th of them; the others stay held out)."""
    found: dict[str, Selection] = {}
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, Mapping):
            limit = entry.get("max_bytes")
            selection = Selection(
                None if limit is None else int(limit),
                int(entry.get("every", 1)),
                int(entry.get("min_bytes", 0)),
            )
            found[str(entry.get("file", ""))] = selection
        else:
            found[str(entry)] = Selection()
    return found


def _entries(manifest: Any) -> list[Mapping[str, Any]]:
    if isinstance(manifest, Mapping):
        found = manifest.get("files", [])
        return [e for e in found if isinstance(e, Mapping)] if isinstance(found, list) else []
    return []


def _log_cases(
    entry: Mapping[str, Any], read: Callable[[str], str], calibration: Mapping[str, Selection]
) -> list[Case]:
    path = str(entry.get("file", ""))
    fabric = entry.get("preset") or entry.get("fabric")
    if not path or not fabric or fabric not in PRESETS:  # a preset this build does not ship
        return []
    named = entry.get("collective")
    collective = Collective(named) if named in {c.value for c in Collective} else None
    log = parse_log(read("nccl-tests/" + path), path, collective)
    rows = measurements_from_log(
        log,
        nodes=entry.get("nodes"),
        gpus_per_node=entry.get("gpus_per_node"),
        source=_short_source(str(entry.get("source", path))),
    )
    quality = str(entry.get("quality", ""))
    suspect = any(word in quality.lower() for word in _SUSPECT)
    reference = str(entry.get("reference", "")) or (quality if suspect else "")
    stem = path.removesuffix(".log")
    multi_gpu = [m for m in rows if m.nodes * m.gpus_per_node > 1]
    selection = calibration.get(path)
    version = nccl_release_of(entry.get("nccl_version"))  # the log's own, when it prints one
    return [
        Case(
            id=f"{stem}@{m.size_bytes}",
            fabric=str(fabric),
            measurement=dataclasses.replace(
                m,
                algorithm=str(entry.get("algorithm", "auto")),
                nccl_version=m.nccl_version or version,
            ),
            calibration=selection is not None and selection.fits(i, m.size_bytes) and not reference,
            note=quality,
            reference=reference,
        )
        for i, m in enumerate(multi_gpu)
    ]


def _short_source(source: str) -> str:
    """``owner/repo:file`` for a GitHub blob URL (the manifest keeps the full address)."""
    url = source.split(" (", maxsplit=1)[0]
    parts = url.removeprefix("https://github.com/").split("/")
    if url.startswith("https://github.com/") and len(parts) > 4 and parts[2] == "blob":
        return f"{parts[0]}/{parts[1]}:{parts[-1]}"
    return url
