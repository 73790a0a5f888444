"""Machine-readable output: ``--json``, ``-o json`` and ``-o yaml`` print the same object.

Every command that prints one object for scripts takes ``--json`` (the original flag, kept) and
``-o``/``--output`` ``json|yaml`` (kubectl's spelling), never both. The YAML document is the
JSON object itself — it is dumped from the parsed JSON text, so both carry the same keys, values
and order, and no Python type can make one differ from the other. Characters outside ASCII are
escaped in both, as ``json.dumps`` escapes them, so a node name with a byte the terminal cannot
encode never breaks the output.

``crd --output`` and ``calibrate --output`` name a FILE; those commands print no object and
have no ``--json``, so no command has two meanings for ``--output``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import yaml

FORMATS = ("json", "yaml")
# The C dumper is ~10x faster on a plan of tens of thousands of ranks; absent without libyaml.
_DUMPER: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """``--json`` and ``-o/--output json|yaml``, one or the other, stored as ``output_format``."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--json",
        dest="output_format",
        action="store_const",
        const="json",
        help="print one JSON object (the same as -o json)",
    )
    group.add_argument(
        "-o",
        "--output",
        dest="output_format",
        choices=FORMATS,
        help="print one object as json or yaml (the --json object) instead of text",
    )


def output_format(args: argparse.Namespace) -> str | None:
    """``json``, ``yaml``, or None for the text a person reads."""
    value = getattr(args, "output_format", None)
    return value if value in FORMATS else None


def emit(body: Any, fmt: str, **json_options: Any) -> None:
    """Print ``body`` as ``fmt``; ``json_options`` are the command's own ``json.dumps`` options
    (indentation, key order), which the YAML document follows too."""
    text = json.dumps(body, **json_options)
    if fmt == "json":
        print(text)
        return
    document = json.loads(text)
    options: dict[str, Any] = {"sort_keys": False, "default_flow_style": False, "width": 100}
    try:
        sys.stdout.write(yaml.dump(document, Dumper=_DUMPER, **options))
    except UnicodeEncodeError:  # a lone surrogate (an undecodable byte of a name): only the
        # pure-Python dumper escapes it, as JSON does (\uDCFF)
        sys.stdout.write(yaml.dump(document, Dumper=yaml.SafeDumper, **options))
