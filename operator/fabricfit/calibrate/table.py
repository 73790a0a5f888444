"""The results table of an nccl-tests log: its column header and its rows (pure).

nccl-tests versions differ in the columns they print: no ``root`` before 2.10, no ``redop`` in the
old all-gather, one (out-of-place) or two (out-of-place, in-place) groups of time, algbw, busbw and
``#wrong`` (``error`` in old versions). The column header fixes the shape; a row that does not fit
it, or carries a cell that is not a number, is a :class:`LogError` naming the file and line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

_MAX_PATH_CHARS = 200
_MAX_REASON_CHARS = 300
# How far a printed algbw / busbw may sit from the identity it satisfies (check_timings): the
# printing's rounding, 0.005 GB/s and 0.5 % of a time printed to 0.01 µs, with room to spare.
TIMING_SLACK_GB_PER_S = 0.01
TIMING_SLACK = 0.01


class LogError(ValueError):
    """An nccl-tests log that cannot be read; ``str(e)`` is ``FILE:LINE: reason``."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path = one_line(path, _MAX_PATH_CHARS)
        self.line = line
        self.reason = one_line(reason, _MAX_REASON_CHARS)
        super().__init__(f"{self.path}:{line}: {self.reason}")


@dataclass(frozen=True)
class LogRow:
    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int
    out_time_us: float
    out_algbw_gb_per_s: float
    out_busbw_gb_per_s: float
    in_time_us: float | None
    in_algbw_gb_per_s: float | None
    in_busbw_gb_per_s: float | None
    line: int  # 1-based line number in the file


_A = re.ASCII
_INT = re.compile(r"-?[0-9]{1,20}", _A)
_FLOAT = re.compile(
    r"[+-]?(?:[0-9]{1,20}(?:\.[0-9]{0,20})?|\.[0-9]{1,20})(?:[eE][+-]?[0-9]{1,3})?", _A
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}", _A)
_GROUP = ("time", "algbw", "busbw")
_WRONG = frozenset({"#wrong", "wrong", "error", "#error"})


@dataclass(frozen=True)
class Columns:
    has_redop: bool
    has_root: bool
    groups: int  # 1 (out-of-place only) or 2 (out-of-place, in-place)

    @property
    def width(self) -> int:
        return 3 + self.has_redop + self.has_root + 4 * self.groups


def parse_columns(path: str, number: int, line: str) -> Columns:
    names = line.replace("#", " #").split()
    names = [n for n in names if n != "#"][3:]  # past size, count, type
    has_redop = bool(names) and names[0] == "redop"
    names = names[has_redop:]
    has_root = bool(names) and names[0] == "root"
    names = names[has_root:]
    groups = len(names) // 4
    shaped = len(names) % 4 == 0 and groups in (1, 2)
    if not shaped or any(
        names[4 * g : 4 * g + 3] != list(_GROUP) or names[4 * g + 3] not in _WRONG
        for g in range(groups)
    ):
        raise LogError(path, number, f"unknown table columns: {line.strip()[:120]!r}")
    return Columns(has_redop, has_root, groups)


def parse_row(path: str, number: int, cells: Sequence[str], columns: Columns) -> LogRow:
    if len(cells) != columns.width:
        raise LogError(
            path,
            number,
            f"row has {len(cells)} columns, the table header has {columns.width}: "
            f"{' '.join(cells)[:120]!r}",
        )
    size_bytes = _count(path, number, cells[0], "size")
    count = _count(path, number, cells[1], "count")
    dtype = _word(path, number, cells[2], "type")
    at = 3
    redop = _word(path, number, cells[at], "redop") if columns.has_redop else "none"
    at += columns.has_redop
    root = _integer(path, number, cells[at], "root") if columns.has_root else -1
    at += columns.has_root
    out = _group(path, number, cells[at : at + 4], required=True)
    inp = (
        _group(path, number, cells[at + 4 : at + 8], required=False)
        if columns.groups == 2
        else None
    )
    return LogRow(
        size_bytes=size_bytes,
        count=count,
        dtype=dtype,
        redop=redop,
        root=root,
        out_time_us=_present(out[0]),
        out_algbw_gb_per_s=_present(out[1]),
        out_busbw_gb_per_s=_present(out[2]),
        in_time_us=inp[0] if inp else None,
        in_algbw_gb_per_s=inp[1] if inp else None,
        in_busbw_gb_per_s=inp[2] if inp else None,
        line=number,
    )


def _group(
    path: str, number: int, cells: Sequence[str], *, required: bool
) -> tuple[float | None, float | None, float | None]:
    """time, algbw, busbw of one out-of-place/in-place group, refusing wrong results."""
    wrong = cells[3]
    if wrong != "N/A":
        errors = _measure(path, number, wrong, "#wrong")
        if errors != 0 and "." not in wrong and "e" not in wrong.lower():
            raise LogError(path, number, f"{wrong} wrong results: the run is broken, do not fit it")
    if not required and cells[0] == cells[1] == cells[2] == "N/A":
        return (None, None, None)
    time_us, algbw, busbw = (
        _measure(path, number, c, n) for c, n in zip(cells[:3], _GROUP, strict=True)
    )
    return (time_us, algbw, busbw)


def _present(value: float | None) -> float:
    # Only the optional in-place group may be N/A; _group enforces that for out-of-place.
    assert value is not None
    return value


def _measure(path: str, number: int, cell: str, name: str) -> float:
    if not _FLOAT.fullmatch(cell):
        raise LogError(path, number, f"{name} {cell[:40]!r} is not a number")
    value = float(cell)
    if not math.isfinite(value) or value < 0:
        raise LogError(path, number, f"{name} {cell[:40]!r} is not a finite non-negative number")
    return value


def _count(path: str, number: int, cell: str, name: str) -> int:
    value = _integer(path, number, cell, name)
    if value < 0:
        raise LogError(path, number, f"{name} {cell[:40]!r} is negative")
    return value


def _integer(path: str, number: int, cell: str, name: str) -> int:
    if not _INT.fullmatch(cell):
        raise LogError(path, number, f"{name} {cell[:40]!r} is not an integer")
    return int(cell)


def _word(path: str, number: int, cell: str, name: str) -> str:
    if not _WORD.fullmatch(cell):
        raise LogError(path, number, f"{name} {cell[:40]!r} is not a name")
    return cell


def one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def check_timings(path: str, row: LogRow, bus_factor: float) -> None:
    """Refuse a row whose time, algbw and busbw contradict each other (LogError naming the line):
    nccl-tests prints algbw = size / time and busbw = algbw × the collective's factor for the
    run's ranks (doc/PERFORMANCE.md), each rounded (time to 0.01 µs below 100 µs, bandwidths
    to 0.01 GB/s), so a copied number that was edited or mistyped, or a log of another rank
    count, breaks one of the identities by more than the rounding (allowed: 1 % + 0.01 GB/s)."""
    groups: list[tuple[float, float | None, float | None, str]] = [
        (row.out_time_us, row.out_algbw_gb_per_s, row.out_busbw_gb_per_s, "out-of-place")
    ]
    if row.in_time_us is not None:
        groups.append((row.in_time_us, row.in_algbw_gb_per_s, row.in_busbw_gb_per_s, "in-place"))
    for time_us, algbw, busbw, which in groups:
        if not time_us or algbw is None or busbw is None:
            continue
        expected = row.size_bytes / time_us / 1e3
        if abs(algbw - expected) > TIMING_SLACK_GB_PER_S + TIMING_SLACK * expected:
            raise LogError(
                path,
                row.line,
                f"{which} time {time_us:g} us and algbw {algbw:g} GB/s contradict each other "
                f"({row.size_bytes} B / {time_us:g} us = {expected:.3g} GB/s)",
            )
        bus = algbw * bus_factor
        if abs(busbw - bus) > TIMING_SLACK_GB_PER_S * (1 + bus_factor) + TIMING_SLACK * busbw:
            raise LogError(
                path,
                row.line,
                f"{which} busbw {busbw:g} GB/s is not algbw {algbw:g} x {bus_factor:.4g}"
                f" = {bus:.3g} GB/s for this run's ranks",
            )
