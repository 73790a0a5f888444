"""``fabricfit calibrate`` starts from the hardware in the logs, refuses what it cannot fit
(TPU bases, rows that contradict themselves, inputs past its limits), fits a dense log in
seconds, and reports its error by node count, fitted and held out."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fabricfit.calibrate.logs import MAX_RANKS
from fabricfit.cli.calibrate import MAX_ROWS
from fabricfit.cli.main import main

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-tests"
A100 = LOGS / "a100-2x8-oci-oke-all-reduce.log"  # names no test: --collective
ALL_REDUCE = ("--collective", "all-reduce")
ABCI = [LOGS / f"a100-{n}x8-abci-all-reduce.log" for n in (1, 4, 16)]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _algorithms(capsys: pytest.CaptureFixture[str], profile: Path) -> set[str]:
    """What the profile runs for all-reduce from 1 MiB to 1 GiB on 1 and 4 nodes of 8."""
    found = set()
    for nodes in ("1", "4"):
        for size in ("1MiB", "64MiB", "1GiB"):
            code, out, err = run(
                capsys, "cost", "--fabric-file", str(profile), "--collective", "all-reduce",
                "--size", size, "--nodes", nodes, "--gpus-per-node", "8", "--json",
            )  # fmt: skip
            assert code == 0, err
            found.add(json.loads(out)["algorithm"])
    return found


def test_an_a100_log_fits_an_a100_base_that_never_runs_nvls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: A100 logs without --fabric were fitted on aws-p5 and then predicted
    NVLS-tree on A100s, which have no NVLink SHARP."""
    output = tmp_path / "a100.yaml"
    code, out, err = run(capsys, "calibrate", str(A100), *ALL_REDUCE, "--output", str(output))
    assert code == 0, err
    assert "base fabric dgx-a100 (A100 in the logs: HGX A100" in out
    assert not _algorithms(capsys, output) & {"nvls", "nvls-tree"}


def test_a_base_named_by_hand_is_warned_about_and_runs_no_missing_nvls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "h100-on-a100.yaml"
    code, out, err = run(
        capsys, "calibrate", str(A100), *ALL_REDUCE, "--fabric", "dgx-h100", "--output", str(output)
    )
    assert code == 0, err
    warnings = err.splitlines()
    assert warnings and all(w.startswith("fabricfit calibrate: warning: ") for w in warnings)
    assert any("ampere, dgx-h100 is hopper" in w for w in warnings)
    assert "base fabric dgx-h100 (--fabric)" in out
    assert not _algorithms(capsys, output) & {"nvls", "nvls-tree"}
    one = str(LOGS / "h100-1x8-xxrjun-all-reduce.log")
    code, out, err = run(capsys, "calibrate", one, "--fabric", "gb200-nvl72")
    assert code == 0 and "the runs use 8 GPUs a node, gb200-nvl72's nodes have 4" in err


@pytest.mark.parametrize("tpu", ["tpu-v4", "tpu-v5e", "tpu-v5p"])
def test_a_tpu_base_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tpu: str
) -> None:
    output = tmp_path / "tpu.yaml"
    code, out, err = run(
        capsys, "calibrate", str(A100), *ALL_REDUCE, "--fabric", tpu, "--output", str(output)
    )
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "is a TPU profile" in err and not output.exists()


def _edit_row(text: str, size: str, column: int, value: str) -> tuple[str, int]:
    lines = text.splitlines()
    number = next(i for i, line in enumerate(lines) if line.split()[:1] == [size])
    cells = lines[number].split()
    cells[column] = value
    lines[number] = " ".join(cells)
    return "\n".join(lines) + "\n", number + 1


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [(6, "99.99", "algbw 99.99 GB/s contradict each other"), (7, "1.00", "busbw 1 GB/s is not")],
)  # fmt: skip
def test_a_row_whose_numbers_contradict_each_other_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], column: int, value: str, reason: str
) -> None:
    """A 1 GiB row whose algbw (or busbw) was edited: its time says otherwise."""
    text, line = _edit_row(A100.read_text(encoding="utf-8"), "1073741824", column, value)
    bad = tmp_path / "edited.log"
    bad.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "calibrate", str(bad), *ALL_REDUCE)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert f"{bad}:{line}: out-of-place" in err and reason in err


def test_inputs_past_the_limits_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    huge = tmp_path / "rank.log"
    lines = A100.read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if "Rank  1 " in line)
    lines[at] = lines[at].replace("Rank  1 ", "Rank 9999999 ")
    huge.write_text("\n".join(lines) + "\n", encoding="utf-8")
    started = time.process_time()
    code, _, err = run(capsys, "calibrate", str(huge), *ALL_REDUCE)
    assert code == 2 and f"over the limit of {MAX_RANKS} ranks" in err
    assert time.process_time() - started < 2
    for flag, value in (
        ("--nodes", "1000000"),
        ("--gpus-per-node", "100"),
        ("--nics-per-node", "0"),
    ):
        code, _, err = run(capsys, "calibrate", str(A100), *ALL_REDUCE, flag, value)
        assert code == 2 and f"{flag} must be between 1 and" in err and err.count("\n") == 1
    code, _, err = run(
        capsys, "calibrate", str(A100), *ALL_REDUCE, "--nodes", "8192", "--gpus-per-node", "72"
    )
    assert code == 2 and f"over the limit of {MAX_RANKS} ranks" in err
    many = tmp_path / "many.log"
    many.write_text(_dense_log(MAX_ROWS + 1), encoding="utf-8")
    code, _, err = run(capsys, "calibrate", str(many))
    assert code == 2 and f"more than {MAX_ROWS} result rows" in err


def _dense_log(rows: int, nodes: int = 2, gpus: int = 8) -> str:
    """An all_reduce_perf stdout of ``rows`` sizes (1 MiB steps) on ``nodes`` x ``gpus`` H100,
    times from a latency and a bandwidth, its columns consistent as nccl-tests prints them."""
    ranks = nodes * gpus
    out = [
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 1048576(bytes) warmup"
        " iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "# Collective test starting: all_reduce_perf",
        "# Using devices",
    ]
    out += [
        f"#  Rank {r:2d} Group  0 Pid {1000 + r} on node-{r // gpus} device  {r % gpus} [0x1b]"
        " NVIDIA H100 80GB HBM3"
        for r in range(ranks)
    ]
    out += [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)",
    ]
    for i in range(1, rows + 1):
        size = i << 20
        time_us = round(40 + size / 0.9e5 * (1 + 0.02 * (i % 3)), 1)
        alg = size / time_us / 1e3
        bus = alg * 2 * (ranks - 1) / ranks
        cells = f"{time_us:8.1f} {alg:7.2f} {bus:7.2f}      0"
        out.append(f"{size:>12} {size // 4:>13}     float     sum      -1 {cells} {cells}")
    return "\n".join([*out, "# Avg bus bandwidth    : 1.0", ""])


def test_a_dense_1024_row_log_fits_in_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """48 s before: every row was fitted. A fit takes 16 rows of a run, spread over log size;
    the other 1,008 are predicted and reported as held out."""
    log = tmp_path / "dense.log"
    log.write_text(_dense_log(1024), encoding="utf-8")
    started = time.process_time()
    code, out, err = run(capsys, "calibrate", str(log))
    assert code == 0, err
    assert time.process_time() - started < 8
    assert "fitted 16 rows: " in out and "held out 1008 rows" in out
    assert out.count("  held out\n") == 1008


def test_runs_at_several_node_counts_report_the_error_at_each_fitted_and_held_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "calibrate", *map(str, ABCI), *ALL_REDUCE)
    assert code == 0, err
    table = out[out.index("error by node count") :].splitlines()
    assert "held-out median" in table[1]
    rows = {line.split()[0]: line for line in table[2:]}
    assert set(rows) == {"1x8", "4x8", "16x8"}
    for line in rows.values():  # rows | fitted median worst | held-out median worst
        cells = line.replace("|", " ").split()
        assert len(cells) == 6 and all(c.endswith("%") for c in cells[2:]), line
    assert "scale: scale-out bandwidth x (2/domains)^" in out
    assert "scaleout_decay" in out.split("error by node count")[0]
    # the log names no NIC, the base has 8 HDR rails: the fit drives the NICs' efficiency to
    # the bottom of its range, and says what that means
    assert "at a bound of their range: nic_efficiency 0.3 (lowest)" in out
    assert "may not be the cluster's" in out


def test_runs_on_fewer_gpus_a_node_than_the_board_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """4 GPUs a node on an 8-GPU board's preset: priced as 4 of its GPUs, and the output says a
    4-GPU node is another board."""
    log = tmp_path / "four.log"
    log.write_text(_dense_log(20, nodes=2, gpus=4), encoding="utf-8")
    code, out, err = run(capsys, "calibrate", str(log))
    assert code == 0, err
    assert "GPUs per node: the runs use 4, dgx-h100's board has 8: priced as 4 of its GPUs" in out
    code, out, err = run(capsys, "calibrate", str(LOGS / "h100-1x8-xxrjun-all-reduce.log"))
    assert code == 0 and "GPUs per node: the runs use" not in out
