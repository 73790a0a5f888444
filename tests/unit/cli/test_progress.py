"""The progress line: drawn in place on a terminal's stderr for long runs, erased before the
output, and never drawn on a pipe, with ``--json``/``-o``, or for a quick ``plan``."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabricfit.cli import plan as plan_cli
from fabricfit.cli.main import main
from fabricfit.cli.progress import ERASE_LINE, Progress

ROOT = Path(__file__).resolve().parents[3]
TRACES = ROOT / "benchmarks" / "traces"
SIMULATE = [
    sys.executable,
    "-m",
    "fabricfit",
    "simulate",
    "--nodes",
    str(TRACES / "nodes-h100-64.yaml"),
    "--trace",
    str(TRACES / "published-mix.yaml"),
    "--placer",
    "fabricfit",
]
PLAN = [
    "plan",
    "--nodes",
    str(ROOT / "tests" / "fixtures" / "nodes" / "native-h100-16.json"),
    "--topology",
    str(ROOT / "tests" / "fixtures" / "plan" / "dense-native.yaml"),
]


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the other end is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def _run_with_terminal_stderr(argv: list[str], tmp_path: Path) -> tuple[int, str, bytes]:
    """Run ``argv`` with stderr on a pseudo-terminal and stdout in a file."""
    leader, follower = pty.openpty()
    with (tmp_path / "stdout").open("w+b") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=follower, stdin=subprocess.DEVNULL)
        os.close(follower)
        terminal = _read_all(leader)
        code = process.wait(timeout=300)
        out.seek(0)
        stdout = out.read().decode()
    os.close(leader)
    return code, stdout, terminal


def test_simulate_draws_one_line_in_place_and_erases_it(tmp_path: Path) -> None:
    code, stdout, terminal = _run_with_terminal_stderr(SIMULATE, tmp_path)
    assert code == 0
    text = terminal.decode()
    redraws = text.split(ERASE_LINE)
    assert len(redraws) >= 3, text  # drawn, redrawn, erased
    assert "\n" not in text  # in place: never a new line
    assert text.endswith(ERASE_LINE)  # gone before the table is printed
    assert any(r.startswith("fabricfit simulate: placer fabricfit, jobs reached ") for r in redraws)
    assert "/240 (" in text  # jobs of the trace
    assert stdout.startswith("fabric ") and "placer fabricfit" in stdout


@pytest.mark.parametrize("flag", [["--json"], ["-o", "yaml"]])
def test_no_progress_with_machine_output(tmp_path: Path, flag: list[str]) -> None:
    code, stdout, terminal = _run_with_terminal_stderr([*SIMULATE, *flag], tmp_path)
    assert code == 0 and terminal == b""
    assert stdout.strip()


def test_no_progress_on_a_pipe() -> None:
    done = subprocess.run(SIMULATE, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and done.stderr == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _plan_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], delay_seconds: float
) -> str:
    slow = plan_cli.plan_placement

    def plan_placement(*args: object, **kwargs: object) -> object:
        time.sleep(delay_seconds)
        return slow(*args, **kwargs)  # type: ignore[arg-type]

    terminal = _Terminal()
    monkeypatch.setattr(plan_cli, "plan_placement", plan_placement)
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(PLAN) == 0
    assert capsys.readouterr().out.startswith("fabricfit plan: PLACED")
    return terminal.getvalue()


def test_a_slow_plan_shows_progress(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _plan_on_a_terminal(monkeypatch, capsys, plan_cli.PROGRESS_DELAY_SECONDS + 0.6)
    assert text.startswith(ERASE_LINE + "fabricfit plan: placing 48 ranks on dgx-h100 (1 s)")
    assert text.endswith(ERASE_LINE)


def test_a_quick_plan_shows_none(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _plan_on_a_terminal(monkeypatch, capsys, 0.0) == ""


def test_the_line_is_cut_and_counts_are_grouped() -> None:
    progress = Progress("fabricfit simulate", stream=_Terminal())
    progress.update(phase="placer " + "x" * 200)
    assert len(progress.line()) == 100 and progress.line().endswith("...")
    progress.update(phase="jobs")
    progress.update(done=12345, total=100000)
    assert progress.line() == "fabricfit simulate: jobs 12,345/100,000 (0 s)"
