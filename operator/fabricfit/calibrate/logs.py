"""Reading the stdout of the nccl-tests ``*_perf`` binaries (pure).

Theory of operation
-------------------
A log is scanned once, line by line (``\\n``-separated, so line numbers match an editor). Each
line first loses the labels launchers put in front of it (``[1,0]<stdout>:`` from Open MPI,
``0:`` from ``srun -l``, ``host:`` from PALS, ``[0]`` anywhere in a line where ranks' output
interleaves). Then, in that order, it may be:

- a header line: ``NCCL version X`` / ``# nccl-tests version … nccl-library=N`` (the NCCL
  version), ``# Collective test starting: NAME`` (the test, hence the collective), or a rank line
  ``#  Rank R [Group G] Pid P on HOST device D [BUSID] NAME`` (ranks, hosts, GPUs per host, the
  GPU model), or
  the run parameters ``# nThread T nGpus G …`` (GPUs each host thread drives, ``-g G``), or
  an NCCL_DEBUG=INFO line naming the NCCL environment the run was made with (``NCCL_ALGO set
  by environment to Ring``; the keys of ``ncclsetup.RUN_ENV_KEYS``), which is how its rows
  are priced, or one naming the hardware (NICs, network, NVLS; :mod:`fabricfit.calibrate.ncclinfo`);
- the table's column header ``# size count type [redop] [root] time algbw busbw #wrong …``,
  which fixes the columns of the rows that follow (:mod:`fabricfit.calibrate.table`);
- a result row, recognised only after a column header: ``SIZE COUNT TYPE …``. A row that does
  not match its header is an error, never skipped: a half-read table would fit a wrong profile.

Everything else (NCCL INFO lines, nvidia-smi, the ``# Avg bus bandwidth`` trailer) is chatter.
The parser is total: any input either yields a :class:`NcclTestsLog` with at least one row or
raises :class:`LogError` whose text is ``FILE:LINE: reason`` on one bounded line. Inputs over
:data:`MAX_LOG_CHARS` are refused before any work; lines over :data:`MAX_LINE_CHARS` are never
handed to a regular expression; a rank at or over :data:`MAX_RANKS`, or a run of more than
:data:`MAX_ROWS` result rows, is refused on the line that passes the limit.

``parse_log`` reads one run and refuses a second test in the same text; ``parse_logs`` splits a
stdout that holds several runs (a script looping over tests) at each run's first header line.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from fabricfit.calibrate.ncclinfo import HardwareScan, LogHardware
from fabricfit.calibrate.table import Columns, LogError, LogRow, parse_columns, parse_row
from fabricfit.cost.collectives import Collective
from fabricfit.fabric.profiles.ncclsetup import RUN_ENV_KEYS, NcclSetupError, run_env_fields

__all__ = [
    "MAX_LOG_CHARS",
    "MAX_RANKS",
    "MAX_ROWS",
    "TESTS",
    "LogError",
    "LogHardware",
    "LogRow",
    "NcclTestsLog",
    "parse_log",
    "parse_logs",
]

# A 64-node NCCL_DEBUG=INFO run stays well below this; a larger "log" is something else.
MAX_LOG_CHARS = 32 * 1024 * 1024
# Header lines and rows are under 200 characters; longer lines are chatter (topology dumps).
MAX_LINE_CHARS = 4096
# Ranks a run may name (a rank line beyond is refused): 8,192 nodes of 8 GPUs, the size of the
# largest published clusters; a layout of that many ranks still takes well under a second.
MAX_RANKS = 65_536
# Result rows in one log: a sweep from 1 B to 16 GiB by doubling has 35; 1,024 is a dense
# linear sweep; more is not an nccl-tests run worth fitting row by row.
MAX_ROWS = 8_192

# nccl-tests binary stem -> collective; gather/scatter/hypercube have no cost model.
TESTS: dict[str, Collective] = {
    "all_reduce": Collective.ALL_REDUCE,
    "all_gather": Collective.ALL_GATHER,
    "reduce_scatter": Collective.REDUCE_SCATTER,
    "alltoall": Collective.ALL_TO_ALL,
    "sendrecv": Collective.SEND_RECV,
    "broadcast": Collective.BROADCAST,
    "reduce": Collective.REDUCE,
}
_UNMODELLED_TESTS = ("gather", "scatter", "hypercube")


@dataclass(frozen=True)
class NcclTestsLog:
    path: str
    collective: Collective | None  # from the test name, else the caller's
    ranks: int | None  # from the "#  Rank N ... on HOST device D" lines (highest N + 1)
    nodes: int | None  # distinct hosts among those lines; None when some rank lines are missing
    gpus_per_node: int | None  # ranks per host when every host has the same number
    nccl_version: str | None
    rows: tuple[LogRow, ...]
    gpus_per_thread: int | None = None  # "nGpus G" of the run parameters (nccl-tests -g G)
    nccl_env: tuple[tuple[str, str], ...] = ()  # (key, value) NCCL printed, keys sorted
    hardware: LogHardware = field(default_factory=LogHardware)  # GPU, NICs, NVLS it states


_A = re.ASCII
_LABELS = (
    re.compile(r"\[[0-9]{1,7}(?:,[0-9]{1,7})?\](?:<std(?:out|err)>)?:?", _A),  # MPI rank tags
    re.compile(r"^\s*[0-9]{1,7}:(?=\s)", _A),  # srun -l
    re.compile(r"^\s*[A-Za-z][A-Za-z0-9_.\-]{0,127}:(?=\s)", _A),  # PALS / kubectl host labels
)
_NCCL_VERSION = re.compile(r"NCCL version ([0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,4})", _A)
_TESTS_LIBRARY = re.compile(r"#\s*nccl-tests version \S{1,40} .*nccl-library=([0-9]{4,7})", _A)
_TEST_START = re.compile(r"#\s*Collective test (?:starting|concluded):\s*([a-z_]{1,40})", _A)
_RUN_PARAMETERS = re.compile(r"^\s*#\s*nThread\s+[0-9]{1,6}\s+nGpus\s", _A)
_GPUS_PER_THREAD = re.compile(r"^\s*#\s*nThread\s+[0-9]{1,6}\s+nGpus\s+([0-9]{1,4})\b", _A)
_TEST_MENTION = re.compile(r"\b([a-z_]{3,20})_perf(?:_mpi)?\b", _A)
_RANK = re.compile(
    r"#\s*Rank\s+([0-9]{1,7})\s+(?:Group\s+[0-9]{1,7}\s+)?Pid\s+[0-9]{1,10}\s+on\s+(\S{1,253})"
    r"\s+device\s+([0-9]{1,4})\s(?:\s*\[[^\]\s]{1,40}\]\s+(\S[^\n]{0,119}))?",
    _A,
)
_NCCL_ENV = re.compile(rf"\b({'|'.join(RUN_ENV_KEYS)}) set by environment to (\S{{1,200}})\s*$", _A)
_COLUMNS = re.compile(r"^\s*#\s*size\s+count\s+type\b", _A)
_ROW_START = re.compile(r"^\s*[0-9]+\s+[0-9]+\s+[A-Za-z_]", _A)


@dataclass
class _Scan:
    path: str
    columns: Columns | None = None
    test: str | None = None
    test_line: int = 0
    mentions: set[str] = field(default_factory=set)
    nccl_version: str | None = None
    library_version: str | None = None
    gpus_per_thread: int | None = None
    nccl_env: dict[str, str] = field(default_factory=dict)
    ranks: dict[int, tuple[str, int]] = field(default_factory=dict)
    rows: list[LogRow] = field(default_factory=list)
    hardware: HardwareScan = field(default_factory=HardwareScan)


def parse_log(text: str, path: str = "<log>", collective: Collective | None = None) -> NcclTestsLog:
    """Parse one nccl-tests stdout; ``collective`` is used when the log does not name its test."""
    lines = _split(text, path)
    return _parse_lines(lines, 0, len(lines), path, collective)


def parse_logs(
    text: str, path: str = "<log>", collective: Collective | None = None
) -> tuple[NcclTestsLog, ...]:
    """Parse a stdout holding several runs one after another (a script looping over tests or
    node counts): one log per run, split where a run's header starts, line numbers kept."""
    lines = _split(text, path)
    # Each run starts with its version line (nccl-tests 2.14+), else with its nThread line.
    starts = _run_starts(lines, _TESTS_LIBRARY) or _run_starts(lines, _RUN_PARAMETERS)
    if not starts:
        return (_parse_lines(lines, 0, len(lines), path, collective),)
    bounds = [0, *starts[1:], len(lines)]
    return tuple(_parse_lines(lines, a, b, path, collective) for a, b in itertools.pairwise(bounds))


def _split(text: str, path: str) -> list[str]:
    if len(text) > MAX_LOG_CHARS:
        raise LogError(
            path, 1, f"log has {len(text)} characters, over the limit of {MAX_LOG_CHARS}"
        )
    return [raw.rstrip("\r") for raw in text.split("\n")]


def _run_starts(lines: list[str], header: re.Pattern[str]) -> list[int]:
    return [
        i
        for i, raw in enumerate(lines)
        if len(raw) <= MAX_LINE_CHARS and "#" in raw and header.search(_strip_labels(raw))
    ]


def _parse_lines(
    lines: list[str], first: int, end: int, path: str, collective: Collective | None
) -> NcclTestsLog:
    scan = _Scan(path)
    for index in range(first, end):
        if len(lines[index]) <= MAX_LINE_CHARS:
            _scan_line(scan, index + 1, _strip_labels(lines[index]))
    if not scan.rows:
        raise LogError(
            path, end, "no result rows (is this the stdout of an nccl-tests *_perf binary?)"
        )
    ranks, nodes, per_node = _rank_counts(scan.ranks)
    return NcclTestsLog(
        path=path,
        collective=_choose_collective(scan, collective),
        ranks=ranks,
        nodes=nodes,
        gpus_per_node=per_node,
        nccl_version=scan.nccl_version or scan.library_version,
        rows=tuple(scan.rows),
        gpus_per_thread=scan.gpus_per_thread,
        nccl_env=tuple(sorted(scan.nccl_env.items())),
        hardware=scan.hardware.result(),
    )


def _strip_labels(line: str) -> str:
    line = _LABELS[0].sub(" ", line)
    for label in _LABELS[1:]:
        line = label.sub("", line, count=1)
    return line


def _scan_line(scan: _Scan, number: int, line: str) -> None:
    if ("#" in line or "NCCL" in line) and _scan_header(scan, number, line):
        return
    if scan.columns is not None and _ROW_START.match(line):
        if len(scan.rows) >= MAX_ROWS:
            raise LogError(scan.path, number, f"more than {MAX_ROWS} result rows in one run")
        scan.rows.append(parse_row(scan.path, number, line.split(), scan.columns))
    elif "_perf" in line:
        scan.mentions.update(m.group(1) for m in _TEST_MENTION.finditer(line))


def _scan_header(scan: _Scan, number: int, line: str) -> bool:
    """Record a header line; False when the line is none of them."""
    if _COLUMNS.match(line):
        scan.columns = parse_columns(scan.path, number, line)
    elif found := _RANK.search(line):
        _record_rank(scan, number, int(found.group(1)), found.group(2), int(found.group(3)))
        if found.group(4):
            scan.hardware.gpu(found.group(4))
    elif found := _TEST_START.search(line):
        _record_test(scan, number, found.group(1).removesuffix("_mpi").removesuffix("_perf"))
    elif found := _NCCL_VERSION.search(line):
        scan.nccl_version = scan.nccl_version or found.group(1)
    elif found := _TESTS_LIBRARY.search(line):
        scan.library_version = scan.library_version or _decode_version(int(found.group(1)))
    elif found := _GPUS_PER_THREAD.match(line):
        scan.gpus_per_thread = scan.gpus_per_thread or max(1, int(found.group(1)))
    elif found := _NCCL_ENV.search(line):
        _record_env(scan, number, found.group(1), found.group(2))
    else:
        return "NCCL INFO" in line and scan.hardware.line(line)
    return True


def _record_rank(scan: _Scan, number: int, rank: int, host: str, device: int) -> None:
    if rank >= MAX_RANKS:
        raise LogError(scan.path, number, f"rank {rank} is over the limit of {MAX_RANKS} ranks")
    seen = scan.ranks.setdefault(rank, (host, device))
    if seen != (host, device):
        raise LogError(
            scan.path,
            number,
            f"rank {rank} is listed on {seen[0]} device {seen[1]} and on {host[:60]} device "
            f"{device}: several runs in one log, or nccl-tests built without MPI",
        )


def _record_env(scan: _Scan, number: int, key: str, value: str) -> None:
    """The first value NCCL printed for ``key`` (every rank prints the same); one NCCL would not
    run with is an error, never ignored: the rows would be priced as another run."""
    if key in scan.nccl_env:
        return
    try:
        run_env_fields(key, value)
    except NcclSetupError as err:
        raise LogError(scan.path, number, str(err)) from None
    scan.nccl_env[key] = value


def _record_test(scan: _Scan, number: int, name: str) -> None:
    if name in _UNMODELLED_TESTS:
        raise LogError(scan.path, number, f"{name}_perf has no collective in the cost model")
    if name not in TESTS:
        raise LogError(scan.path, number, f"unknown nccl-tests test {name[:40]!r}")
    if scan.test is not None and scan.test != name:
        raise LogError(
            scan.path,
            number,
            f"a second test ({name}_perf after {scan.test}_perf on line {scan.test_line}): "
            "give each test its own log",
        )
    if scan.test is None:
        scan.test, scan.test_line = name, number


def _choose_collective(scan: _Scan, given: Collective | None) -> Collective | None:
    if scan.test is not None:
        named = TESTS[scan.test]
        if given is not None and given is not named:
            raise LogError(
                scan.path, scan.test_line, f"the log is {scan.test}_perf, not {given.value}"
            )
        return named
    if given is not None:
        return given
    # No test line (nccl-tests before 2.14): trust a command line only when it names one test.
    mentioned = {TESTS[m] for m in scan.mentions if m in TESTS}
    return mentioned.pop() if len(mentioned) == 1 else None


def _rank_counts(ranks: dict[int, tuple[str, int]]) -> tuple[int | None, int | None, int | None]:
    if not ranks:
        return (None, None, None)
    per_host: dict[str, int] = {}
    for host, _device in ranks.values():
        per_host[host] = per_host.get(host, 0) + 1
    total = max(ranks) + 1  # nccl-tests numbers ranks 0..n-1
    if len(ranks) != total:
        # Rank lines were cut (a post quoting only the last one): hosts are unknown.
        return (total, None, None)
    counts = set(per_host.values())
    per_node = counts.pop() if len(counts) == 1 else None
    return (total, len(per_host), per_node)


def _decode_version(code: int) -> str:
    # NCCL_VERSION_CODE is X*10000 + Y*100 + Z since 2.9 (X*1000 + Y*100 + Z before).
    if code >= 20900:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"
