"""The nccl-tests log parser: real logs, the format variations across versions, and totality.

Variants are built from a real published log (tests/fixtures/nccl-tests) by transforming it the
way launchers and older nccl-tests versions do, so every case checks the same known numbers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.calibrate.logs import MAX_LOG_CHARS, LogError, parse_log, parse_logs
from fabricfit.cost.collectives import Collective

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-tests"
ALL_REDUCE = "h100-10x8-xxrjun-all-reduce.log"
SENDRECV = "h100-2x1-xxrjun-smoke-sendrecv.log"


def text_of(name: str) -> str:
    return (FIXTURES / name).read_text()


def with_prefix(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.split("\n"))


def without_root(text: str) -> str:
    """The table as nccl-tests before 2.10 printed it: no root column."""
    out = []
    for line in text.split("\n"):
        if re.match(r"#\s+size\s+count", line):
            out.append(line.replace("    root", ""))
        elif re.match(r"\s+[0-9]+\s+[0-9]+\s+\w+\s+\w+\s+-1\s", line):
            out.append(re.sub(r"(\s+\w+)\s+-1(\s)", r"\1\2", line, count=1))
        else:
            out.append(line)
    return "\n".join(out)


def test_real_log_reads_header_and_rows() -> None:
    log = parse_log(text_of(ALL_REDUCE), ALL_REDUCE)
    assert log.collective is Collective.ALL_REDUCE
    assert (log.ranks, log.nodes, log.gpus_per_node) == (80, 10, 8)
    assert log.nccl_version == "2.29.2"  # from "nccl-library=22902"
    first = log.rows[0]
    assert (first.size_bytes, first.count, first.dtype, first.redop, first.root) == (
        33554432,
        4194304,
        "double",
        "sum",
        -1,
    )
    assert first.out_busbw_gb_per_s > 0 and first.in_busbw_gb_per_s is not None
    line = text_of(ALL_REDUCE).split("\n")[first.line - 1]
    assert line.split()[:2] == ["33554432", "4194304"]
    assert [r.size_bytes for r in log.rows] == [33554432 * 2**i for i in range(10)]


def test_in_place_na_error_column_is_accepted() -> None:
    log = parse_log(text_of(SENDRECV), SENDRECV)
    assert log.collective is Collective.SEND_RECV
    assert all(r.in_time_us is not None for r in log.rows)


@pytest.mark.parametrize(
    ("variant", "transform"),
    [
        ("open-mpi tags", lambda t: with_prefix(t, "[1,0]<stdout>:")),
        ("srun -l labels", lambda t: with_prefix(t, "0: ")),
        ("host labels", lambda t: with_prefix(t, "x3005c0s13b0n0: ")),
        ("windows line ends", lambda t: t.replace("\n", "\r\n")),
        ("interleaved NCCL INFO", lambda t: t.replace("\n  ", "\nh:1:2 [0] NCCL INFO x\n  ")),
        ("no root column", without_root),
    ],
)
def test_format_variants_give_the_same_rows(variant: str, transform: object) -> None:
    assert callable(transform)
    base = parse_log(text_of(ALL_REDUCE), ALL_REDUCE)
    log = parse_log(transform(text_of(ALL_REDUCE)), variant)
    strip = [(r.size_bytes, r.out_busbw_gb_per_s, r.in_busbw_gb_per_s) for r in log.rows]
    assert strip == [(r.size_bytes, r.out_busbw_gb_per_s, r.in_busbw_gb_per_s) for r in base.rows]
    assert (log.ranks, log.nodes, log.collective) == (base.ranks, base.nodes, base.collective)


def test_in_place_group_may_be_na() -> None:
    text = re.sub(
        r"(\s+0)(\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+0)$",
        "\\1     N/A     N/A     N/A     N/A",
        text_of(ALL_REDUCE),
        flags=re.M,
    )
    log = parse_log(text, "na")
    assert all(r.in_time_us is None and r.in_busbw_gb_per_s is None for r in log.rows)
    assert all(r.out_busbw_gb_per_s > 0 for r in log.rows)


def test_collective_comes_from_the_caller_when_the_log_has_no_test_name() -> None:
    name = "gb200-nvl72-2rack-coreweave-all-reduce.log"
    assert parse_log(text_of(name), name).collective is None
    log = parse_log(text_of(name), name, Collective.ALL_REDUCE)
    assert log.collective is Collective.ALL_REDUCE
    assert (log.ranks, log.nodes, log.gpus_per_node) == (144, None, None)  # one rank line quoted


def test_a_command_line_names_the_test_of_an_old_log() -> None:
    text = "$ mpirun -np 8 ./build/alltoall_perf -b 8 -e 1G\n" + "\n".join(
        line for line in text_of(ALL_REDUCE).split("\n") if "Collective test" not in line
    )
    assert parse_log(text, "old").collective is Collective.ALL_TO_ALL


@pytest.mark.parametrize(
    ("case", "text", "line", "reason"),
    [
        ("empty", "", 1, "no result rows"),
        ("chatter only", "NCCL INFO hello\nGPU0 X NV18\n", 3, "no result rows"),
        (
            "short row",
            "#  size count type redop root time algbw busbw #wrong\n 8 2 float sum",
            2,
            "row has 4 columns",
        ),
        (
            "bad number",
            "#  size count type time algbw busbw #wrong\n 8 2 float 1.0 x 2 0",
            2,
            "algbw 'x' is not a number",
        ),
        (
            "wrong results",
            "#  size count type time algbw busbw #wrong\n 8 2 float 1 1 1 3",
            2,
            "3 wrong results",
        ),
        ("bad header", "#  size count type time speed\n", 1, "unknown table columns"),
        (
            "two tests",
            "# Collective test starting: all_reduce_perf\n"
            "# Collective test starting: alltoall_perf\n",
            2,
            "a second test",
        ),
        ("no model", "# Collective test starting: gather_perf\n", 1, "has no collective"),
        (
            "rank twice",
            "#  Rank  0 Pid 1 on a device  0 [0x1] G\n#  Rank  0 Pid 2 on b device  0 [0x1] G\n",
            2,
            "built without MPI",
        ),
    ],
)
def test_unreadable_logs_raise_file_line_reason(
    case: str, text: str, line: int, reason: str
) -> None:
    with pytest.raises(LogError) as raised:
        parse_log(text, "run.log")
    assert str(raised.value).startswith(f"run.log:{line}: "), case
    assert reason in str(raised.value)


def test_conflicting_collective_is_refused() -> None:
    with pytest.raises(LogError, match="is all_reduce_perf, not all-gather"):
        parse_log(text_of(ALL_REDUCE), ALL_REDUCE, Collective.ALL_GATHER)


def test_huge_input_is_refused_by_size() -> None:
    with pytest.raises(LogError, match="over the limit"):
        parse_log(" " * (MAX_LOG_CHARS + 1), "big.log")


def test_error_text_is_one_bounded_line() -> None:
    with pytest.raises(LogError) as raised:
        parse_log("#  size count type time speed " + "x" * 10_000, "p\n" * 500)
    message = str(raised.value)
    assert "\n" not in message and len(message) < 600


_LINES = st.sampled_from(text_of(ALL_REDUCE).split("\n") + text_of(SENDRECV).split("\n"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_LINES, st.text(max_size=80)), max_size=40))
def test_parser_is_total(lines: list[str]) -> None:
    try:
        log = parse_log("\n".join(lines), "fuzz.log")
    except LogError as error:
        assert str(error).startswith("fuzz.log:")
    else:
        assert log.rows and all(r.line >= 1 for r in log.rows)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_parser_is_total_on_any_text(text: str) -> None:
    with contextlib.suppress(LogError):
        parse_log(text)


def test_several_runs_in_one_stdout_are_split_with_their_line_numbers() -> None:
    first, second = text_of(ALL_REDUCE), text_of("h100-10x8-xxrjun-all-gather.log")
    text = first + "\n" + second
    with pytest.raises(LogError, match="a second test"):
        parse_log(text, "both.log")
    logs = parse_logs(text, "both.log")
    assert [log.collective for log in logs] == [Collective.ALL_REDUCE, Collective.ALL_GATHER]
    offset = len(first.split("\n"))
    alone = parse_log(second, "second.log")
    assert [r.line for r in logs[1].rows] == [r.line + offset for r in alone.rows]
    assert logs[1].rows == tuple(dataclasses.replace(r, line=r.line + offset) for r in alone.rows)


def test_one_run_is_one_log() -> None:
    (log,) = parse_logs(text_of(SENDRECV), SENDRECV)
    assert log == parse_log(text_of(SENDRECV), SENDRECV)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_LINES, st.text(max_size=80)), max_size=40))
def test_splitting_parser_is_total(lines: list[str]) -> None:
    try:
        logs = parse_logs("\n".join(lines), "fuzz.log")
    except LogError as error:
        assert str(error).startswith("fuzz.log:")
    else:
        assert logs and all(log.rows for log in logs)


def test_gpus_per_thread_comes_from_the_run_parameters() -> None:
    """-g 8 (one thread drives 8 GPUs) is read off ``# nThread 1 nGpus 8``; -g 1 runs say 1."""
    together = parse_log(text_of("h100-1x8-together-ring-all-gather.log"))
    assert together.gpus_per_thread == 8
    assert parse_log(text_of(ALL_REDUCE)).gpus_per_thread == 1


def test_the_nccl_environment_of_the_run_comes_from_its_info_lines() -> None:
    """NCCL_DEBUG=INFO prints what the environment set (tuning.cc, misc/param.cc), behind
    launcher labels; every rank prints it, the first value is kept."""
    info = [
        "[1,0]<stdout>:cnode3-002:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring",
        "cnode3-002:1:1 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.",
        "cnode3-002:2:2 [1] NCCL INFO NCCL_ALGO set by environment to Ring",
        "cnode3-002:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8388608.",
        "cnode3-002:1:1 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
    ]
    log = parse_log("\n".join([*info, text_of(ALL_REDUCE)]))
    assert log.nccl_env == (
        ("NCCL_ALGO", "Ring"),
        ("NCCL_BUFFSIZE", "8388608."),
        ("NCCL_NVLS_ENABLE", "0."),
    )
    assert parse_log(text_of(ALL_REDUCE)).nccl_env == ()


@pytest.mark.parametrize(
    ("line", "reason"),
    [("NCCL_PROTO set by environment to LL129", "unknown name 'LL129'"),
     ("NCCL_ALGO set by environment to allreduce:tree", "per-collective lists"),
     ("NCCL_BUFFSIZE set by environment to 1024.", "between 65536 and")],
)  # fmt: skip
def test_an_environment_nccl_would_not_run_is_an_error_on_its_line(line: str, reason: str) -> None:
    text = "\n".join([text_of(ALL_REDUCE), f"host:7:7 [0] NCCL INFO {line}"])
    last = text.count("\n") + 1
    with pytest.raises(LogError, match=rf"^x\.log:{last}: .*{re.escape(reason)}"):
        parse_log(text, "x.log")
