"""Every `fabricfit plan|cost|inspect|calibrate|simulate` command in the README succeeds."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [
        line
        for line in lines
        if line.startswith(
            (
                "fabricfit plan",
                "fabricfit cost",
                "fabricfit inspect",
                "fabricfit calibrate",
                "fabricfit simulate",
            )
        )
    ]


def test_readme_shows_offline_examples() -> None:
    commands = readme_commands()
    assert any(c.startswith("fabricfit plan") for c in commands)
    assert any(c.startswith("fabricfit cost") for c in commands)
    assert any(c.startswith("fabricfit inspect") for c in commands)
    assert any(c.startswith("fabricfit calibrate") for c in commands)
    assert any(c.startswith("fabricfit simulate") for c in commands)


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs(command: str) -> None:
    argv = [sys.executable, "-m", "fabricfit", *shlex.split(command)[1:]]
    result = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
