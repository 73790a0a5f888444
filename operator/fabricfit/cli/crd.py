"""``fabricfit crd``: print, write or check the files generated from the models and registries.

``fabricfit crd --output crds/trainingtopologies.fabricfit.dev.yaml`` regenerates the committed
CRD; ``--check FILE`` exits 1 when FILE differs (for CI or a pre-commit hook). ``--chart DIR``
writes what the Helm chart at DIR carries from the same sources (the CRD, the RBAC rules of the
workload kinds, the values schema's label-scheme and queue-policy enums); ``--check-chart DIR``
compares them.

The CRD lists names the api layer does not own (label schemes, workload kinds); they come from
the registries here, so a new scheme or kind is one module and ``make crd``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from fabricfit.api.crd import CRD_FILE, Registries, render_crd_yaml
from fabricfit.api.models import QUEUE_POLICIES
from fabricfit.cli.common import EXIT_INFEASIBLE, EXIT_OK, UsageError
from fabricfit.cli.inputs import read_bytes, shown
from fabricfit.fabric.schemes import NAMES as SCHEME_NAMES
from fabricfit.workloads import KINDS

WORKLOAD_RULES = Path("files") / "workload-rules.yaml"
CHART_CRD = Path("files") / "crds" / Path(CRD_FILE).name
VALUES_SCHEMA = Path("values.schema.json")


def configure(parser: argparse.ArgumentParser) -> None:
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--output", "-o", metavar="FILE", type=Path, help="write the YAML to FILE")
    target.add_argument(
        "--check",
        metavar="FILE",
        type=Path,
        help=f"exit 1 when FILE (e.g. {CRD_FILE}) differs from the generated CRD",
    )
    target.add_argument(
        "--chart", metavar="DIR", type=Path, help="write the Helm chart's generated files in DIR"
    )
    target.add_argument(
        "--check-chart",
        metavar="DIR",
        type=Path,
        help="exit 1 when a generated file of the Helm chart in DIR is out of date",
    )


def generated_crd() -> str:
    """The CRD YAML with the registries' names: byte for byte what ``crds/`` holds."""
    registries = Registries(label_schemes=SCHEME_NAMES, workload_kinds=tuple(KINDS))
    return render_crd_yaml(registries)


def workload_rules_yaml() -> str:
    """The namespaced RBAC rules every registered workload kind needs (the chart's include)."""
    rules = [
        {"apiGroups": [kind.api_group], "resources": [kind.plural], "verbs": list(kind.rbac_verbs)}
        for kind in KINDS.values()
        if not kind.selects_pods  # plain pods: the chart's pod rule covers them
    ]
    # No comment line: the chart's template comments the rules (the RBAC docs read it).
    return yaml.safe_dump(rules, sort_keys=False, default_flow_style=None, width=100)


def chart_files(chart: Path) -> dict[Path, str]:
    """Each generated chart file (relative path) and the text it must hold."""
    schema_path = chart / VALUES_SCHEMA
    text = read_bytes(str(schema_path), "values schema").decode("utf-8", "replace")
    try:
        schema = json.loads(text)
        operator = schema["properties"]["operator"]["properties"]
        operator["labelScheme"]["enum"] = list(SCHEME_NAMES)
        operator["queuePolicy"]["enum"] = list(QUEUE_POLICIES)
    except (ValueError, KeyError, TypeError) as err:
        where = shown(str(schema_path))
        message = (
            f"the chart's values schema {where} has no properties.operator.properties"
            ".labelScheme and .queuePolicy"
        )
        raise UsageError(message) from err
    return {
        CHART_CRD: generated_crd(),
        WORKLOAD_RULES: workload_rules_yaml(),
        VALUES_SCHEMA: json.dumps(schema, indent=2, ensure_ascii=False) + "\n",
    }


def execute(args: argparse.Namespace) -> int:
    if args.chart is not None or args.check_chart is not None:
        return _chart(args.chart or args.check_chart, check=args.check_chart is not None)
    text = generated_crd()
    if args.check is not None:
        return _check(args.check, text)
    if args.output is None:
        sys.stdout.write(text)
        return EXIT_OK
    _write(args.output, text)
    return EXIT_OK


def _chart(chart: Path, *, check: bool) -> int:
    stale = 0
    for relative, text in chart_files(chart).items():
        if check:
            stale += _check(
                chart / relative, text, fix=f"fabricfit crd --chart {shown(str(chart))}"
            )
        else:
            _write(chart / relative, text)
    return EXIT_INFEASIBLE if stale else EXIT_OK


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise UsageError(f"cannot write {shown(str(path))}: {err.strerror}") from err


def _check(path: Path, text: str, fix: str = "") -> int:
    exists = path.is_file() or str(path) == "-"
    current = read_bytes(str(path), "generated file").decode("utf-8", "replace") if exists else ""
    if exists and current == text:
        return EXIT_OK
    shown_path = shown(str(path))
    fix = fix or f"fabricfit crd --output {shown_path}"
    print(f"{shown_path} is out of date: run `{fix}`", file=sys.stderr)
    return EXIT_INFEASIBLE
