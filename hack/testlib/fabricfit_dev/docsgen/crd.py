"""docs/reference/trainingtopology.md: every field of the TrainingTopology CRD's schema.

The schema is the one ``fabricfit crd`` writes (``fabricfit.cli.crd.generated_crd``, generated from
the pydantic models), walked depth first: one table per object (its fields with type, whether
required, default, constraints and description), then the object's CEL validation rules.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import yaml

from fabricfit.api.crd import CRD_FILE
from fabricfit.cli.crd import generated_crd
from fabricfit_dev.docsgen.markdown import cell, code, header, page, table

CONSTRAINTS = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("minLength", "length ≥ {}"),
    ("maxLength", "length ≤ {}"),
    ("minItems", "items ≥ {}"),
    ("maxItems", "items ≤ {}"),
    ("maxProperties", "entries ≤ {}"),
)
INTRO = (
    "A `TrainingTopology` (group `fabricfit.dev`, version `v1alpha1`, namespaced, short name "
    "`tt`) names a training workload, states how it is parallelised, and receives the plan. "
    "This page lists every field of its schema as the API server checks it; the concepts "
    "behind them are in [Placement](../concepts/placement.md)."
)


def render_page() -> str:
    crd = yaml.safe_load(generated_crd())
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    lines = header("TrainingTopology fields", f"{CRD_FILE} (fabricfit crd)", INTRO)
    lines += [f"{cell(schema.get('description', ''))}", ""]
    lines += _columns(version.get("additionalPrinterColumns", []))
    for path, node in _objects(schema["properties"]["spec"], "spec"):
        lines += _object_section(path, node)
    for path, node in _objects(schema["properties"]["status"], "status"):
        lines += _object_section(path, node)
    return page(lines)


def _columns(columns: list[Mapping[str, Any]]) -> list[str]:
    rows = [
        [
            code(c["name"]),
            "`-o wide`" if c.get("priority") else "always",
            code(c["jsonPath"]),
            cell(c.get("description", "")),
        ]
        for c in columns
    ]
    intro = ["## `kubectl get tt` columns", ""]
    return intro + table(["column", "shown", "from", "meaning"], rows)


def _objects(node: Mapping[str, Any], path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every object with properties under ``node`` (itself first), with its path."""
    if node.get("type") == "array":
        yield from _objects(node.get("items", {}), f"{path}[]")
        return
    if node.get("type") != "object" or "properties" not in node:
        return
    yield path, node
    for name, child in node["properties"].items():
        yield from _objects(child, f"{path}.{name}")


def _object_section(path: str, node: Mapping[str, Any]) -> list[str]:
    lines = [f"## `{path}`", ""]
    if node.get("description"):
        lines += [cell(node["description"]), ""]
    required = set(node.get("required", []))
    rows = [
        [
            code(name),
            _type(child),
            "yes" if name in required else "",
            code(json.dumps(child["default"])) if "default" in child else "",
            _describe(child),
        ]
        for name, child in node["properties"].items()
    ]
    lines += table(["field", "type", "required", "default", "description"], rows)
    rules = node.get("x-kubernetes-validations", [])
    if rules:
        lines += [f"Validation rules of `{path}` (CEL, checked by the API server):", ""]
        lines += [
            f"- {code(r['rule'])}: {cell(r.get('message', ''), in_table=False)}" for r in rules
        ]
        lines.append("")
    return lines


def _type(node: Mapping[str, Any]) -> str:
    kind = str(node.get("type", "any"))
    if kind == "array":
        return f"array of {_type(node.get('items', {}))}"
    if kind == "object" and "additionalProperties" in node:
        return f"map of {_type(node['additionalProperties'])}"
    if node.get("x-kubernetes-int-or-string"):
        return "integer or string"
    if node.get("format"):
        return f"{kind} ({node['format']})"
    return kind


def _describe(node: Mapping[str, Any]) -> str:
    parts = [cell(node.get("description", ""))]
    if "enum" in node:
        parts.append("One of " + ", ".join(code(v) for v in node["enum"]) + ".")
    limits = [form.format(node[key]) for key, form in CONSTRAINTS if key in node]
    if node.get("type") == "array" and "maxItems" in node.get("items", {}):
        limits.append(f"each item ≤ {node['items']['maxItems']}")
    if limits:
        parts.append("Limits: " + ", ".join(limits) + ".")
    if "pattern" in node:
        parts.append(f"Pattern {code(node['pattern'])}.")
    if node.get("x-kubernetes-preserve-unknown-fields"):
        parts.append("Free-form (unknown fields kept).")
    rules = node.get("x-kubernetes-validations", [])
    parts += [cell(r.get("message", "")) + "." for r in rules if node.get("type") != "object"]
    return " ".join(p for p in parts if p)
