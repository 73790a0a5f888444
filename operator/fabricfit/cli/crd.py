"""``fabricfit crd``: print, write or check the TrainingTopology CRD generated from the models.

``fabricfit crd --output crds/trainingtopologies.fabricfit.dev.yaml`` regenerates the committed
file; ``--check FILE`` exits 1 when FILE differs (for CI or a pre-commit hook).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fabricfit.api.crd import CRD_FILE, render_crd_yaml
from fabricfit.cli.common import EXIT_INFEASIBLE, EXIT_OK, UsageError
from fabricfit.cli.inputs import read_bytes, shown


def configure(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--output", "-o", metavar="FILE", type=Path, help="write the YAML to FILE")
    target.add_argument(
        "--check",
        metavar="FILE",
        type=Path,
        help=f"exit 1 when FILE (e.g. {CRD_FILE}) differs from the generated CRD",
    )


def execute(args: argparse.Namespace) -> int:
    text = render_crd_yaml()
    if args.check is not None:
        return _check(args.check, text)
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"cannot write {shown(str(args.output))}: {err.strerror}") from err
    return EXIT_OK


def _check(path: Path, text: str) -> int:
    current = read_bytes(str(path), "CRD").decode("utf-8", "replace")
    if current == text:
        return EXIT_OK
    shown_path = shown(str(path))
    print(
        f"{shown_path} is out of date: run `fabricfit crd --output {shown_path}`", file=sys.stderr
    )
    return EXIT_INFEASIBLE
