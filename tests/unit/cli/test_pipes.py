"""A reader that closes the pipe early (``fabricfit plan … | head -1``) ends the command
quietly with 141 — what a shell shows for a writer killed by SIGPIPE — never "internal error"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabricfit.cli.main import EXIT_CLOSED_PIPE

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NODES = str(FIXTURES / "nodes" / "native-h100-16.json")
PLAN = ["plan", "--nodes", NODES, "--topology", str(FIXTURES / "plan" / "dense-native.yaml")]
COST = ["cost", "--fabric", "dgx-h100", "--collective", "all-reduce", "--size", "1GiB"]
COMMANDS = {
    "plan": PLAN,
    "plan --json": [*PLAN, "--json"],
    "plan -o yaml": [*PLAN, "-o", "yaml"],
    "inspect": ["inspect", "--nodes", NODES],
    "inspect --json": ["inspect", "--nodes", NODES, "--json"],
    "cost": [*COST, "--nodes", "2", "--gpus-per-node", "8"],
    "version": ["version"],
}


def _closed_pipe_run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``argv`` with stdout on a pipe whose reader is already gone: every write fails."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [sys.executable, "-m", "fabricfit", *argv],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(writer)


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_closed_stdout_ends_quietly(argv: list[str]) -> None:
    done = _closed_pipe_run(argv)
    assert (done.returncode, done.stderr) == (EXIT_CLOSED_PIPE, "")
