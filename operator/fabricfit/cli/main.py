"""The ``fabricfit`` command: dispatch to a subcommand module, imported lazily.

Exit codes are the same for every subcommand: 0 placed/ok, 1 does not fit, 2 invalid input (one
line on stderr), 3 internal error — an exception nobody anticipated, reported as one line that
asks for a bug report; the traceback is printed only when ``FABRICFIT_DEBUG=1``. Two ends come
from outside and are quiet: a reader that closed the pipe (``fabricfit plan … | head -1``) ends
the command with 141, the status a shell shows for a writer killed by SIGPIPE (as ``kubectl`` or
``cat`` are); Ctrl-C ends it with 130 (128 + SIGINT). ``fabricfit`` alone prints its help on
stdout and exits 0, as ``kubectl`` and ``helm`` do: asking a tool with no arguments what it
does is not an error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence

from fabricfit import __version__
from fabricfit.cli.common import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Parser, UsageError, one_line

SUBCOMMANDS: dict[str, str] = {
    "run": "start the operator (kopf) against the current cluster",
    "plan": "plan a placement offline from a node dump and a TrainingTopology",
    "cost": "predict the time of one collective on a fabric preset",
    "calibrate": "fit a fabric profile to nccl-tests logs of your cluster",
    "crd": "print the TrainingTopology CRD generated from the models",
    "inspect": "show the topology tiers fabricfit detects in a node dump",
    "release": "remove fabricfit's finalizers and scheduling gates (uninstall, operator down)",
    "simulate": "replay a job trace on a node dump with fabricfit, Kueue BestFit and spread",
    "version": "print the versions of fabricfit and Python, and the git commit it was built from",
    "completion": "print a shell completion script for bash, zsh or fish",
}
EXIT_CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer killed by it
EXIT_INTERRUPTED = 130  # 128 + SIGINT
DEBUG_VARIABLE = "FABRICFIT_DEBUG"


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
    _tolerate_unencodable_output()
    try:
        try:
            return _dispatch(args)
        finally:  # output still buffered for a pipe would otherwise fail at exit, noisily
            sys.stdout.flush()
    except BrokenPipeError:
        return _closed_pipe()
    except KeyboardInterrupt:
        print("", file=sys.stderr)  # end the line ^C was echoed on
        return EXIT_INTERRUPTED


def _dispatch(args: list[str]) -> int:
    parser = build_parser()
    if not args:
        parser.print_help()
        return EXIT_OK
    if args[0] not in SUBCOMMANDS:
        parser.parse_args(args)  # prints help or the version and exits, or a one-line error
        parser.error("give a command")  # only options that are no command, e.g. "--"
    name = args[0]
    try:
        return _run(name, args[1:])
    except BrokenPipeError:
        raise
    except UsageError as err:
        print(one_line(f"fabricfit {name}: {err}"), file=sys.stderr)
        return EXIT_USAGE
    except MemoryError:
        print(f"fabricfit {name}: out of memory; the input is too large", file=sys.stderr)
        return EXIT_USAGE
    except RecursionError:
        print(f"fabricfit {name}: the input is nested too deeply", file=sys.stderr)
        return EXIT_USAGE
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception as err:  # the one place that turns a bug into exit 3
        return _internal_error(name, err)


def command_parser(name: str) -> Parser:
    """The full parser of subcommand ``name`` (importing only its module)."""
    module = importlib.import_module(f"fabricfit.cli.{name}")
    sub = Parser(prog=f"fabricfit {name}", description=SUBCOMMANDS[name])
    module.configure(sub)
    return sub


def _run(name: str, argv: list[str]) -> int:
    parsed: argparse.Namespace = command_parser(name).parse_args(argv)
    module = importlib.import_module(f"fabricfit.cli.{name}")
    code: int = module.execute(parsed)
    return code


def _internal_error(name: str, err: Exception) -> int:
    if os.environ.get(DEBUG_VARIABLE) == "1":
        traceback.print_exception(err, file=sys.stderr)
    where = traceback.extract_tb(err.__traceback__)[-1] if err.__traceback__ else None
    at = f" at {_file_name(where.filename)}:{where.lineno}" if where else ""
    print(
        one_line(
            f"fabricfit {name}: internal error ({type(err).__name__}{at}); please report it "
            f"with the command and its input files ({DEBUG_VARIABLE}=1 prints the traceback)",
            300,
        ),
        file=sys.stderr,
    )
    return EXIT_INTERNAL


def _closed_pipe() -> int:
    """Stdout's reader is gone: end quietly. Python flushes stdout once more at exit; pointed
    at /dev/null, that flush cannot fail and print "Exception ignored" on stderr."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is no file (an embedding, a test)
        pass
    return EXIT_CLOSED_PIPE


def _file_name(filename: str) -> str:
    return filename.rsplit("/", 1)[-1]


def _tolerate_unencodable_output() -> None:
    """Escape what stdout/stderr cannot encode (a C locale, a node name with a lone
    surrogate) instead of dying halfway through a summary."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
