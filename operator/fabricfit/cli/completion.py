"""``fabricfit completion bash|zsh|fish``: a shell completion script generated from the parsers.

Theory of operation
-------------------
Every subcommand's parser is built as the command itself builds it
(:func:`fabricfit.cli.main.command_parser`) and read into a small model: per command its
options, whether each takes a value, and the values to offer — argparse ``choices`` (label
schemes, placers, algorithms, output formats), the fabric presets for an option whose type is
:func:`fabricfit.cli.common.profile_name`, the collectives for ``--collective``; any other value
is completed as a file name. :mod:`fabricfit.cli.completionscripts` writes that model as a
script of the chosen shell; the script holds every name, so completing never starts Python.

Install (also on the docs site's CLI conventions page)::

    bash:  source <(fabricfit completion bash)          # or save it to
           # ~/.local/share/bash-completion/completions/fabricfit
    zsh:   fabricfit completion zsh > "${fpath[1]}/_fabricfit"   # then restart zsh
    fish:  fabricfit completion fish > ~/.config/fish/completions/fabricfit.fish
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from fabricfit.cli.common import EXIT_OK, profile_name
from fabricfit.cost import Collective
from fabricfit.fabric.profiles import PRESETS

SHELLS = ("bash", "zsh", "fish")
# Metavars of the options that name a file (the others are counts, sizes and names).
FILE_METAVARS = frozenset({"FILE", "DIR", "OUT", "NODES", "PODS", "TRACE", "SLICES", "CLAIMS"})


@dataclass(frozen=True)
class Option:
    """One option: its flags, and what its value is (none, one of ``values``, or a file)."""

    flags: tuple[str, ...]
    help: str
    takes_value: bool = False
    values: tuple[str, ...] = ()
    repeatable: bool = False
    files: bool = False  # the value is a path (else free text: a count, a size, a name)


@dataclass(frozen=True)
class Command:
    """A subcommand: its options, and what its positional arguments are."""

    name: str
    help: str
    options: tuple[Option, ...]
    positional_values: tuple[str, ...] = ()
    positional_files: bool = False  # calibrate's LOG files


INSTALL = (
    "install: bash: source <(fabricfit completion bash); zsh: fabricfit completion zsh > "
    '"${fpath[1]}/_fabricfit"; fish: fabricfit completion fish > '
    "~/.config/fish/completions/fabricfit.fish"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    parser.epilog = f"{INSTALL}. {parser.epilog}"


def execute(args: argparse.Namespace) -> int:
    from fabricfit.cli.completionscripts import RENDERERS

    print(RENDERERS[args.shell](commands()), end="")
    return EXIT_OK


def commands() -> tuple[Command, ...]:
    """Every subcommand, as its parser defines it."""
    from fabricfit.cli.main import SUBCOMMANDS, command_parser

    return tuple(
        _command(name, help_text, command_parser(name)) for name, help_text in SUBCOMMANDS.items()
    )


def _command(name: str, help_text: str, parser: argparse.ArgumentParser) -> Command:
    options = tuple(_option(a) for a in parser._actions if a.option_strings)
    positionals = [a for a in parser._actions if not a.option_strings]
    values = tuple(v for a in positionals for v in _values(a))
    return Command(
        name=name,
        help=help_text,
        options=options,
        positional_values=values,
        positional_files=bool(positionals) and not values,
    )


def _option(action: argparse.Action) -> Option:
    values = _values(action)
    return Option(
        flags=tuple(action.option_strings),
        help=_first_sentence(action.help or ""),
        takes_value=action.nargs != 0,
        values=values,
        repeatable=isinstance(action, argparse._AppendAction),
        files=action.nargs != 0 and not values and is_path(action),
    )


def is_path(action: argparse.Action) -> bool:
    """Whether ``action`` takes a path: a ``Path`` type, a file-like metavar (``NODES.yaml``,
    ``FILE``, ``DIR``, ...) or a dest such as ``kubeconfig`` / ``fabric_file``."""
    metavar = action.metavar if isinstance(action.metavar, str) else ""
    return (
        action.type is Path
        or "." in metavar
        or metavar in FILE_METAVARS
        or action.dest.endswith(("_file", "_dir", "kubeconfig"))
    )


def _values(action: argparse.Action) -> tuple[str, ...]:
    """The values worth offering for ``action``: its choices, or the names it accepts."""
    if action.choices is not None:
        return tuple(str(c) for c in action.choices)
    if action.type is profile_name:
        return tuple(sorted(PRESETS))
    if action.dest == "collective":
        return tuple(c.value for c in Collective)
    return ()


def _first_sentence(text: str) -> str:
    """A help text for a one-line description: up to its first '(' or ';', at most 80 chars."""
    cut = min((i for i in (text.find(" ("), text.find(";")) if i > 0), default=len(text))
    short = " ".join(text[:cut].split())
    return short if len(short) <= 80 else short[:77] + "..."
