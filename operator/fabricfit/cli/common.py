"""Shared CLI plumbing: an argument parser whose errors are one line and exit code 2."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

EXIT_OK = 0
EXIT_INFEASIBLE = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Invalid input from the user: reported as one line on stderr, exit code 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a single line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        fail(f"{self.prog}: {message}")


def one_line(message: str) -> str:
    """``message`` on one line: every line break (``\\r``, ``\\v``, U+2028… — user input such
    as a YAML key can carry any of them) becomes a space."""
    return " ".join(message.splitlines()).strip()


def fail(message: str) -> NoReturn:
    """Print one line to stderr and exit with the usage-error code."""
    print(one_line(message), file=sys.stderr)
    raise SystemExit(EXIT_USAGE)
