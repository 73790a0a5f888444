"""``fabricfit completion bash|zsh|fish``: scripts generated from the parsers that really
complete subcommands, options, presets, collectives and label schemes in each shell. The zsh
and fish tests carry the ``tools`` marker: ``hack/tools.sh`` installs those shells."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabricfit.cli.completion import commands
from fabricfit.cli.main import SUBCOMMANDS, command_parser, main
from fabricfit.fabric.profiles import PRESETS

BASH_CASES = {
    "a subcommand": (["fabricfit", "pl"], ["plan"]),
    "every subcommand": (["fabricfit", ""], [*SUBCOMMANDS, "-h", "--help", "--version"]),
    "a preset": (["fabricfit", "cost", "--fabric", "dgx-h"], ["dgx-h100", "dgx-h200"]),
    "a preset after =": (["fabricfit", "plan", "--fabric", "=", "gb"], ["gb200-nvl72"]),
    "a preset, nothing typed": (["fabricfit", "simulate", "--fabric", ""], sorted(PRESETS)),
    "a collective": (
        ["fabricfit", "cost", "--collective", "all-"],
        ["all-reduce", "all-gather", "all-to-all"],
    ),
    "a label scheme": (["fabricfit", "inspect", "--label-scheme", "to"], ["topograph"]),
    "an option": (["fabricfit", "cost", "--gpus"], ["--gpus-per-node"]),
    "an output format": (["fabricfit", "plan", "-o", ""], ["json", "yaml"]),
    "a shell": (["fabricfit", "completion", ""], ["bash", "zsh", "fish"]),
    "a file name: bash's own": (["fabricfit", "plan", "--nodes", "x"], []),
}


def _script(shell: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["completion", shell]) == 0
    path = tmp_path / f"fabricfit.{shell}"
    path.write_text(capsys.readouterr().out, encoding="utf-8")
    return path


@pytest.mark.parametrize(("words", "expected"), BASH_CASES.values(), ids=BASH_CASES.keys())
def test_bash_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], words: list[str], expected: list[str]
) -> None:
    script = _script("bash", tmp_path, capsys)
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"source {script}\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
        "_fabricfit\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
        "complete -p fabricfit >&2\n"
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.split() == expected
    assert done.stderr.strip() == "complete -o default -F _fabricfit fabricfit"


def test_every_option_of_every_command_is_in_the_model() -> None:
    model = {c.name: c for c in commands()}
    assert list(model) == list(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        flags = {f for a in command_parser(name)._actions for f in a.option_strings}
        assert flags == {f for o in model[name].options for f in o.flags}, name
    files = {f for o in model["plan"].options if o.files for f in o.flags}
    assert {"--nodes", "--pods", "--topology", "--svg", "--fabric-file", "--fabric-dir"} <= files
    assert not {f for o in model["cost"].options if o.files for f in o.flags} - {"--fabric-file"}
    assert model["calibrate"].positional_files


@pytest.mark.tools
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("fabricfit pl", ["plan"]),
        ("fabricfit cost --fabric dgx-h", ["dgx-h100", "dgx-h200"]),
        ("fabricfit plan --label-scheme to", ["topograph"]),
        ("fabricfit cost --col", ["--collective"]),
        ("fabricfit completion ", ["bash", "fish", "zsh"]),
        ("fabricfit cost --size ", []),
    ],
)
def test_fish_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, expected: list[str]
) -> None:
    script = _script("fish", tmp_path, capsys)
    program = f"source {script}; complete -C '{line}'"
    done = subprocess.run(["fish", "-c", program], capture_output=True, text=True, check=True)
    assert [row.split("\t")[0] for row in done.stdout.splitlines()] == expected


@pytest.mark.tools
def test_zsh_script_parses_and_registers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _script("zsh", tmp_path, capsys)
    subprocess.run(["zsh", "-n", str(script)], check=True)
    program = (
        f"autoload -U compinit; compinit -u -D; source {script}; print -r -- $_comps[fabricfit]"
    )
    done = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "_fabricfit"
    text = script.read_text(encoding="utf-8")
    assert all(f"'{name}:" in text for name in SUBCOMMANDS)
    assert "'--collective[" in text and "(all-reduce reduce-scatter" in text
