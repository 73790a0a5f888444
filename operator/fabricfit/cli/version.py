"""``fabricfit version``: the package version, the Python running it, and the build's commit.

The commit is what the build recorded (``fabricfit/build-info.json``, written by the build hook
in ``setup.py`` from ``FABRICFIT_COMMIT`` or the checkout's HEAD); nothing here runs git. A source
or editable install records none and says so. ``fabricfit --version`` prints the first line only.
"""

from __future__ import annotations

import argparse
import json
import platform
from importlib import resources
from typing import Any

from fabricfit import __version__
from fabricfit.cli.common import EXIT_OK
from fabricfit.cli.output import add_output_arguments, emit, output_format

BUILD_INFO = "build-info.json"
MAX_BUILD_INFO_BYTES = 4096


def configure(parser: argparse.ArgumentParser) -> None:
    add_output_arguments(parser)


def build_commit() -> str | None:
    """The commit the build recorded, or None (no record, or one that cannot be read)."""
    try:
        text = resources.files("fabricfit").joinpath(BUILD_INFO).read_text("utf-8")
        info = json.loads(text[:MAX_BUILD_INFO_BYTES])
    except (OSError, ValueError):
        return None
    commit = info.get("commit") if isinstance(info, dict) else None
    return commit if isinstance(commit, str) and commit else None


def version_info() -> dict[str, Any]:
    """The ``--json`` object."""
    return {
        "version": __version__,
        "python": platform.python_version(),
        "pythonImplementation": platform.python_implementation(),
        "commit": build_commit(),
    }


def execute(args: argparse.Namespace) -> int:
    info = version_info()
    if fmt := output_format(args):
        emit(info, fmt)
        return EXIT_OK
    commit = info["commit"] or "not recorded (a source or editable install)"
    print(f"fabricfit {info['version']}")
    print(f"python {info['python']} ({info['pythonImplementation']})")
    print(f"commit {commit}")
    return EXIT_OK
