"""Shared CLI plumbing: exit codes, and an argument parser whose errors are one line (exit 2)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import NoReturn

from fabricfit.fabric.names import unknown_name

EXIT_OK = 0
EXIT_INFEASIBLE = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

EXIT_CODES_EPILOG = (
    "exit codes: 0 placed / ok, 1 does not fit (crd --check: out of date; release: the API "
    "server refused or did not answer), 2 invalid input (one line on stderr), 3 internal error "
    "(one line; set FABRICFIT_DEBUG=1 for the traceback), 141 stdout closed by its reader"
)


MAX_USAGE_CHARS = 300
PROFILE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def profile_name(text: str) -> str:
    """argparse ``type`` of ``--fabric``: a profile name (a DNS label), echoed only cut short."""
    if not PROFILE_NAME.match(text):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise argparse.ArgumentTypeError(
            f"{shown!r} is not a profile name (lowercase letters, digits and '-', at most 63)"
        )
    return text


class UsageError(Exception):
    """Invalid input from the user: reported as one line on stderr, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line on stderr and exit code 2, and ``--help``
    ends with the exit codes."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("epilog", EXIT_CODES_EPILOG)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def _check_value(self, action: argparse.Action, value: object) -> None:
        # argparse lists every choice; a mistyped name gets the one it most likely meant
        if action.choices is not None and value not in action.choices:
            what = action.option_strings[-1] if action.option_strings else action.metavar
            if isinstance(action, argparse._SubParsersAction):
                what = "command"
            self.error(unknown_name(str(what or action.dest), value, map(str, action.choices)))
        super()._check_value(action, value)

    def error(self, message: str) -> NoReturn:
        # argparse quotes the offending value whole ("invalid choice: '…'"): cut it short
        fail(one_line(f"{self.prog}: {message}", MAX_USAGE_CHARS))


def one_line(message: str, limit: int = 1000) -> str:
    """``message`` on one line and at most ``limit`` characters: every line break (``\\r``,
    ``\\v``, U+2028… — user input such as a YAML key can carry any of them) becomes a space."""
    text = " ".join(message.splitlines()).strip()
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fail(message: str) -> NoReturn:
    """Print one line to stderr and exit with the usage-error code."""
    print(one_line(message), file=sys.stderr)
    raise SystemExit(EXIT_USAGE)
