"""Exit codes of every subcommand: 0 ok, 1 does not fit, 2 invalid input, 3 internal error."""

from __future__ import annotations

import argparse

import pytest

from fabricfit.cli import main as cli_main
from fabricfit.cli.common import EXIT_CODES_EPILOG, EXIT_INTERNAL, EXIT_USAGE


def _explode(_args: argparse.Namespace) -> int:
    raise KeyError("a bug nobody anticipated")


def test_an_unexpected_exception_is_one_line_and_exit_3(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(cli_main.DEBUG_VARIABLE, raising=False)
    monkeypatch.setattr("fabricfit.cli.crd.execute", _explode)
    assert cli_main.main(["crd"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "internal error" in err and "please report it" in err and "FABRICFIT_DEBUG=1" in err


def test_fabricfit_debug_prints_the_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(cli_main.DEBUG_VARIABLE, "1")
    monkeypatch.setattr("fabricfit.cli.crd.execute", _explode)
    assert cli_main.main(["crd"]) == EXIT_INTERNAL
    err = capsys.readouterr().err
    assert "Traceback" in err and "a bug nobody anticipated" in err
    assert err.rstrip().splitlines()[-1].startswith("fabricfit crd: internal error")


def test_deep_nesting_and_memory_exhaustion_are_invalid_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for error in (RecursionError, MemoryError):

        def fail(_args: argparse.Namespace, error: type[BaseException] = error) -> int:
            raise error()

        monkeypatch.setattr("fabricfit.cli.crd.execute", fail)
        assert cli_main.main(["crd"]) == EXIT_USAGE
        assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize("command", ["plan", "cost", "crd", "run"])
def test_help_lists_the_exit_codes(capsys: pytest.CaptureFixture[str], command: str) -> None:
    with pytest.raises(SystemExit) as done:
        cli_main.main([command, "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert " ".join(EXIT_CODES_EPILOG.split()) in text


@pytest.mark.parametrize(
    "argv",
    [
        ["cost", "--fabric", "X" * 5000, "--collective", "all-reduce", "--size", "1",
         "--nodes", "1", "--gpus-per-node", "1"],
        ["cost", "--fabric", "dgx-h100", "--collective", "all-reduce", "--size", "1",
         "--nodes", "9" * 5000, "--gpus-per-node", "1"],
        ["plan", "--nodes", "n", "--topology", "t", "--label-scheme", "k" * 5000],
    ],
    ids=["fabric", "nodes", "label-scheme"],
)  # fmt: skip
def test_argument_errors_echo_a_short_prefix(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        cli_main.main(argv)
    err = capsys.readouterr().err
    assert done.value.code == EXIT_USAGE and err.count("\n") == 1 and len(err) <= 301, err


def test_no_arguments_prints_the_help_on_stdout_and_exits_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli_main.main([]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("usage: fabricfit") and err == ""
    assert all(name in out for name in cli_main.SUBCOMMANDS)
