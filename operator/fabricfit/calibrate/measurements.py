"""A measured nccl-tests row as the fitter and the accuracy report take it (pure).

A :class:`Measurement` is one row: collective, bytes per rank, nodes × GPUs per node, the time
and busbw nccl-tests printed (the faster of its out-of-place and in-place timings,
:func:`row_timing`), where it came from, and how the run was made (a forced algorithm, the GPUs
one thread drove, the NCCL release and environment). :func:`measurements_from_log` turns a parsed
log (:mod:`fabricfit.calibrate.logs`) into them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fabricfit.cost.collectives import Collective, bus_factor
from fabricfit.fabric.profiles.ncclsetup import NcclSetupError, parse_version


class FitError(ValueError):
    """The measurements cannot be fitted or predicted (one-line message)."""


@dataclass(frozen=True)
class Measurement:
    collective: Collective
    size_bytes: int
    nodes: int
    gpus_per_node: int
    busbw_gb_per_s: float
    time_us: float
    source: str = ""
    algorithm: str = "auto"  # a forced NCCL_ALGO, as the run was made
    nodes_per_domain: int | None = None  # None: the profile's NVLink domain size
    gpus_per_thread: int = 1  # GPUs one host thread drives (nccl-tests -g G)
    nccl_version: str | None = None  # the NCCL release the run used, when known
    # NCCL environment the run was made with ((key, value), ncclsetup.RUN_ENV_KEYS), sorted
    nccl_env: tuple[tuple[str, str], ...] = ()


class _Row(Protocol):
    @property
    def size_bytes(self) -> int: ...
    @property
    def out_time_us(self) -> float: ...
    @property
    def out_busbw_gb_per_s(self) -> float: ...
    @property
    def in_time_us(self) -> float | None: ...
    @property
    def in_busbw_gb_per_s(self) -> float | None: ...


class _Log(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def collective(self) -> Collective | None: ...
    @property
    def ranks(self) -> int | None: ...
    @property
    def nodes(self) -> int | None: ...
    @property
    def gpus_per_node(self) -> int | None: ...
    @property
    def rows(self) -> Sequence[_Row]: ...


def measurements_from_log(
    log: _Log, *, nodes: int | None = None, gpus_per_node: int | None = None, source: str = ""
) -> tuple[Measurement, ...]:
    """The rows of a parsed nccl-tests log as measurements, each at the faster of its two timings
    (``row_timing``). ``nodes`` and ``gpus_per_node`` override the header; one of them is derived
    from the rank count when the other is known. FitError when the collective or the layout
    cannot be determined."""
    if log.collective is None:
        raise FitError(
            f"{log.path}: unknown collective: the log names no test (pass --collective, e.g."
            " --collective all-reduce)"
        )
    nodes = nodes or log.nodes
    gpus = gpus_per_node or log.gpus_per_node
    if log.ranks:
        if nodes and not gpus and log.ranks % nodes == 0:
            gpus = log.ranks // nodes
        if gpus and not nodes and log.ranks % gpus == 0:
            nodes = log.ranks // gpus
    if not nodes or not gpus:
        raise FitError(f"{log.path}: node and GPU counts unknown (pass --nodes/--gpus-per-node)")
    if log.ranks and nodes * gpus != log.ranks:
        raise FitError(f"{log.path}: {nodes} nodes x {gpus} GPUs != {log.ranks} ranks in the log")
    return tuple(
        Measurement(
            log.collective,
            r.size_bytes,
            nodes,
            gpus,
            *row_timing(r),
            source or log.path,
            gpus_per_thread=int(getattr(log, "gpus_per_thread", None) or 1),
            nccl_version=nccl_release_of(getattr(log, "nccl_version", None)),
            nccl_env=tuple(getattr(log, "nccl_env", ())),
        )
        for r in log.rows
        if r.size_bytes > 0 and r.out_time_us > 0
    )


def row_timing(row: _Row) -> tuple[float, float]:
    """(busbw GB/s, time µs) of a result row: the faster of its out-of-place and in-place timings.
    nccl-tests times the same call at the same size twice; a stall in one of them (the first
    call's warm-up, other traffic) only ever adds time, while from 16 MiB the median ratio of
    the two is within 2 % of 1 on every judged log here (in-place all-gather ~1 % faster:
    it skips the local copy)."""
    inside = row.in_time_us
    if inside is not None and 0 < inside < row.out_time_us:
        return row.in_busbw_gb_per_s or 0.0, inside
    return row.out_busbw_gb_per_s, row.out_time_us


def nccl_release_of(value: object) -> str | None:
    """``value`` when it is an NCCL release ("2.26.2"), else None (not stated, or not one)."""
    try:
        return parse_version(value)
    except NcclSetupError:
        return None


def shared_release(rows: Sequence[Measurement]) -> str | None:
    """The NCCL release every row names, when they all name the same one."""
    found = {m.nccl_version for m in rows}
    return found.pop() if len(found) == 1 else None


def measured_seconds(m: Measurement) -> float:
    if m.time_us > 0:
        return m.time_us * 1e-6
    ranks = m.nodes * m.gpus_per_node
    algbw = m.busbw_gb_per_s / bus_factor(m.collective, ranks)
    if algbw <= 0:
        raise FitError(f"row of {m.size_bytes} B has neither a time nor a busbw")
    return m.size_bytes / (algbw * 1e9)
