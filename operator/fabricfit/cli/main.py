"""The ``fabricfit`` command: dispatch to a subcommand module, imported lazily."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from fabricfit import __version__
from fabricfit.cli.common import EXIT_USAGE, Parser, UsageError, one_line

SUBCOMMANDS: dict[str, str] = {
    "run": "start the operator (kopf) against the current cluster",
    "plan": "plan a placement offline from a node dump and a TrainingTopology",
    "cost": "predict the time of one collective on a fabric preset",
    "crd": "print the TrainingTopology CRD generated from the models",
}


def build_parser() -> Parser:
    parser = Parser(
        prog="fabricfit",
        description="Topology-aware placement for distributed GPU training on Kubernetes.",
    )
    parser.add_argument("--version", action="version", version=f"fabricfit {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, help_text in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args or args[0] not in SUBCOMMANDS:
        parsed = parser.parse_args(args)  # prints help/version or a one-line error
        if parsed.command is None:
            parser.print_help()
            return EXIT_USAGE
    name = args[0]
    module = importlib.import_module(f"fabricfit.cli.{name}")
    sub = Parser(prog=f"fabricfit {name}", description=SUBCOMMANDS[name])
    module.configure(sub)
    parsed_sub: argparse.Namespace = sub.parse_args(args[1:])
    try:
        code: int = module.execute(parsed_sub)
    except UsageError as err:
        print(one_line(f"fabricfit {name}: {err}"), file=sys.stderr)
        return EXIT_USAGE
    return code
