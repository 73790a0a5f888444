"""``fabricfit calibrate`` on real published nccl-tests logs (tests/fixtures/nccl-tests)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest

from fabricfit.calibrate.fit import predict
from fabricfit.cli.calibrate import read_measurements
from fabricfit.cli.main import main
from fabricfit.fabric.profiles import FabricProfile, get_profile
from fabricfit.fabric.profiles.catalog import parse_profile_file

BANDWIDTH_FIELDS = (
    "nvlink_efficiency", "nvls_efficiency", "nic_efficiency", "pipeline_fill_loops",
    "stage_fill_loops", "alltoall_efficiency", "alltoall_decay", "p2p_fill_chunks",
    "nvls_tree_efficiency", "nvls_tree_stage_fill_loops",
)  # fmt: skip
LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-tests"
ONE_NODE = LOGS / "h100-1x8-xxrjun-all-reduce.log"
TEN_NODES = LOGS / "h100-10x8-xxrjun-all-reduce.log"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["calibrate", *argv])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_two_node_counts_fit_a_loadable_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "mine.yaml"
    code, out, err = run(
        capsys, str(ONE_NODE), str(TEN_NODES), "--fabric", "dgx-h100", "--output", str(output)
    )
    assert code == 0, err
    profile = parse_profile_file(output.read_text(encoding="utf-8"), str(output))
    assert profile.name == "dgx-h100-calibrated"
    assert "10x8" in out and "1x8" in out and "median |error|" in out
    # the fit lowers what it minimises, the mean |log(predicted / measured time)| over the rows
    # (the printed median may rise while the worst row falls: 10x8 at 32 MiB, 128 % -> 13 %)
    rows = read_measurements([str(ONE_NODE), str(TEN_NODES)], None, None, None)

    def mean_log_error(p: FabricProfile) -> float:
        return statistics.mean(abs(math.log(1 + predict(p, m).error)) for m in rows)

    assert mean_log_error(profile) < mean_log_error(get_profile("dgx-h100"))
    # the field table's columns line up whatever the longest field name: every fitted value
    # ends where the header's "fitted" does, every name leaves a space before the base value
    header, *rest = out[out.index("\nfield ") + 1 :].splitlines()
    fields = [line for line in rest if line.endswith("  fitted") or "  kept: " in line]
    assert len(fields) > 10 and all(
        line[len(header) - 1] != " " and line[len(header) :].startswith("  ") for line in fields
    )
    assert all(line.split()[0] + " " in line[: len(header) - 22] for line in fields)
    # both logs print nccl-library=22902: the profile runs NCCL 2.29.2's tuner
    assert "NCCL 2.29.2 (the logs' release)" in out and profile.nccl_version == "2.29.2"


def test_small_message_logs_move_no_bandwidth_or_fill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A user's logs of <= 64 KiB only: latencies are fitted, every efficiency and fill is the
    base's, and the field table says so."""
    log = tmp_path / "small.log"
    lines = (LOGS / "h100-2x8-aws-p5-all-reduce.log").read_text(encoding="utf-8").splitlines()
    log.write_text(
        "\n".join(line for line in lines if _size(line) <= 64 << 10) + "\n", encoding="utf-8"
    )
    output = tmp_path / "mine.yaml"
    code, out, err = run(
        capsys, str(log), "--nodes", "2", "--gpus-per-node", "8", "--collective", "all-reduce",
        "--fabric", "aws-p5", "--output", str(output),
    )  # fmt: skip
    assert code == 0, err
    base, fitted = get_profile("aws-p5"), parse_profile_file(output.read_text(), str(output))
    for name in BANDWIDTH_FIELDS:
        assert getattr(fitted, name) == getattr(base, name), name
        (row,) = [line for line in out.splitlines() if line.startswith(name + " ")]
        assert "kept: no row constrains it (no row > 64 KiB)" in row
    assert any(line.split()[-1] == "fitted" for line in out.splitlines() if "latency" in line)


def _size(line: str) -> int:
    cells = line.split()
    return int(cells[1]) if len(cells) > 1 and cells[1].isdigit() else 0


def test_the_default_base_is_the_preset_of_the_gpus_in_the_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, str(ONE_NODE))
    assert code == 0, err
    first, second = out.splitlines()[:2]
    assert first.startswith("hardware in the logs: NVIDIA H100 80GB HBM3 x 8 per node;")
    assert second.startswith("base fabric dgx-h100 (H100 in the logs: HGX H100:")


def test_a_log_without_its_test_name_needs_the_collective(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = str(LOGS / "h100-2x8-aws-p5-all-reduce.log")  # the table only: no rank lines
    layout = ("--nodes", "2", "--gpus-per-node", "8")
    code, _, err = run(capsys, log, *layout, "--fabric", "aws-p5")
    assert code == 2 and "unknown collective: the log names no test (pass --collective" in err
    assert err.count("\n") == 1
    code, _, err = run(capsys, log, *layout, "--fabric", "aws-p5", "--collective", "all-reduce")
    assert code == 0, err
    # no device line names the GPUs: no base is guessed
    code, out, err = run(capsys, log, *layout, "--collective", "all-reduce")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "the logs name no GPU model" in err and "pass --fabric BASE" in err


def test_unparsable_input_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.log"
    lines = ONE_NODE.read_text(encoding="utf-8").splitlines()
    row = next(i for i, line in enumerate(lines) if line.strip()[:1].isdigit())
    lines[row] = lines[row].replace(lines[row].split()[5], "abc", 1)
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run(capsys, str(bad))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and f"{bad}:{row + 1}:" in err
    code, _, err = run(capsys, str(tmp_path / "missing.log"))
    assert code == 2 and "missing.log" in err


TOGETHER_RING = LOGS / "h100-1x8-together-ring-all-reduce.log"  # NCCL_ALGO=RING, not in the log


def test_a_forced_ring_run_fits_nvlink_not_nvls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Priced as NCCL ran it, a ring run constrains the ring's NVLink numbers and leaves NVLS
    alone — from --nccl-algo, or from the log's own NCCL_DEBUG=INFO line."""
    fields = "nvls_efficiency", "nvls_latency_us", "pipeline_fill_loops"
    code, out, err = run(capsys, str(TOGETHER_RING), "--fabric", "dgx-h100", "--nccl-algo", "Ring")
    assert code == 0, err
    assert "runs priced as made with NCCL_ALGO=Ring (the profile keeps" in out
    kept = {line.split()[0] for line in out.splitlines() if "kept:" in line}
    assert set(fields) <= kept and "nvlink_efficiency" not in kept
    logged = tmp_path / "ring.log"
    line = "host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to RING\n"
    logged.write_text(line + TOGETHER_RING.read_text(encoding="utf-8"), encoding="utf-8")
    code, again, err = run(capsys, str(logged), "--fabric", "dgx-h100")
    assert code == 0, err
    assert "NCCL_ALGO=RING" in again and _after_env(again) == _after_env(out)
    code, blind, _ = run(capsys, str(TOGETHER_RING), "--fabric", "dgx-h100")
    assert "runs priced as made" not in blind
    assert "nvls_efficiency" not in {ln.split()[0] for ln in blind.splitlines() if "kept:" in ln}


def _after_env(out: str) -> str:
    return out.split("runs priced as made with", 1)[1].split("\n", 1)[1]


@pytest.mark.parametrize(
    ("flag", "value", "reason"),
    [("--nccl-algo", "Ring;Tree", "per-collective lists"),
     ("--nccl-algo", "Rings", "unknown name 'Rings'"),
     ("--nccl-proto", "^LL,LL128,Simple", "enables nothing")],
)  # fmt: skip
def test_an_nccl_environment_flag_nccl_would_refuse_is_exit_2(
    capsys: pytest.CaptureFixture[str], flag: str, value: str, reason: str
) -> None:
    code, out, err = run(capsys, str(ONE_NODE), flag, value)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert f"invalid {flag}: " in err and reason in err


def test_a_long_nccl_environment_value_is_cut_in_the_message(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, str(ONE_NODE), "--nccl-algo", "x" * 5000)
    assert code == 2 and err.count("\n") == 1 and len(err) < 300 and "..." in err
