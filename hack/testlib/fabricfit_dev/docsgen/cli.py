"""docs/reference/cli.md: every ``fabricfit`` subcommand and flag, from the argparse parsers.

``fabricfit.cli.main`` builds each subcommand's parser lazily (``SUBCOMMANDS`` → the module's
``configure``); this walks exactly those parsers, so the page lists what ``--help`` does:
usage, flags with their argument, default and choices, mutually exclusive groups, and the exit
codes every subcommand shares.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterable

from fabricfit.cli import main as cli_main
from fabricfit.cli.common import EXIT_CODES_EPILOG, Parser
from fabricfit_dev.docsgen.markdown import cell, code, header, page, table

INTRO = (
    "`fabricfit` is one command with subcommands; `plan`, `cost`, `inspect`, `calibrate` and "
    "`simulate` work offline on files, `run` is the operator, `release` talks to a cluster. "
    "Bad input is one line on stderr and exit code 2, never a traceback."
)


def render_page() -> str:
    lines = header("Command line", "fabricfit.cli (the argparse parsers)", INTRO)
    codes = EXIT_CODES_EPILOG.removeprefix("exit codes: ")
    lines += ["## Exit codes", "", f"Every subcommand: {cell(codes, in_table=False)}.", ""]
    lines += table(["subcommand", "what it does"], _summary())
    for name, description in cli_main.SUBCOMMANDS.items():
        lines += _subcommand(f"fabricfit {name}", description, parser_of(name))
    return page(lines)


def _summary() -> list[list[str]]:
    return [
        [f"[`{name}`](#fabricfit-{name})", cell(text)]
        for name, text in cli_main.SUBCOMMANDS.items()
    ]


def parser_of(name: str) -> argparse.ArgumentParser:
    """The parser ``fabricfit NAME`` parses its arguments with (as cli.main builds it)."""
    module = importlib.import_module(f"fabricfit.cli.{name}")
    parser = Parser(prog=f"fabricfit {name}", description=cli_main.SUBCOMMANDS[name])
    module.configure(parser)
    return parser


def _subcommand(prog: str, description: str, parser: argparse.ArgumentParser) -> list[str]:
    text = cell(description, in_table=False)
    lines = [f"## `{prog}`", "", text[:1].upper() + text[1:] + ".", ""]
    lines += ["```text", _usage(prog, parser), "```", ""]
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    rows = [_row(parser, a) for a in actions if not isinstance(a, argparse._SubParsersAction)]
    if rows:
        lines += table(["argument", "value", "default", "description"], rows)
    for group in parser._mutually_exclusive_groups:
        names = ", ".join(code(_flag(a)) for a in group._group_actions)
        need = "exactly one" if group.required else "at most one"
        lines += [f"Give {need} of {names}.", ""]
    for sub in actions:
        if isinstance(sub, argparse._SubParsersAction):
            for name, child in sub.choices.items():
                lines += _subcommand(f"{prog} {name}", child.description or "", child)
    return lines


def _usage(prog: str, parser: argparse.ArgumentParser) -> str:
    """One usage line, independent of the terminal's width."""
    parts = [prog]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        text = _flag(action) if not action.option_strings else _option(action)
        parts.append(text if action.required or not action.option_strings else f"[{text}]")
    return " ".join(parts)


def _option(action: argparse.Action) -> str:
    longs = [o for o in action.option_strings if o.startswith("--")]
    flag = (longs or action.option_strings)[0]
    value = _value(action)
    return f"{flag} {value}" if value else flag


def _flag(action: argparse.Action) -> str:
    if action.option_strings:
        return ", ".join(action.option_strings)
    return _value(action) or action.dest


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.metavar is not None:
        name = str(action.metavar)
    elif action.choices is not None:
        name = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        name = action.dest.upper() if action.option_strings else action.dest
    if action.nargs == "+":
        return f"{name}..."
    if action.nargs == "*":
        return f"[{name}...]"
    if action.nargs == "?":
        return f"[{name}]"
    return name


def _row(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    required = " (required)" if action.required and action.option_strings else ""
    return [
        code(_flag(action)) + required,
        code(_value(action)) if action.option_strings else "",
        _default(action),
        _help(parser, action),
    ]


def _default(action: argparse.Action) -> str:
    default = action.default
    if action.nargs == 0 or default is None or default == argparse.SUPPRESS:
        return ""
    if isinstance(default, list | tuple) and not default:
        return ""
    return code(default)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = action.help or ""
    if "%" in text:
        params = {**vars(action), "prog": parser.prog}
        params = {k: getattr(v, "__name__", v) for k, v in params.items()}
        text = text % params
    choices = _choices(action)
    return " ".join(p for p in (cell(text), choices) if p)


def _choices(action: argparse.Action) -> str:
    values: Iterable[object] | None = action.choices
    if values is None or action.metavar is None:
        return ""
    return "One of " + ", ".join(code(v) for v in values) + "."
