"""The generated CRD: names and versions, printer columns that resolve into the schema, and an
openAPIV3Schema that is structural (every node typed, nothing the API server rejects) and
bounded (every string, list, map and number has a limit, so CEL cost stays estimable)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, Field

from fabricfit.api import constants
from fabricfit.api.crd import Registries, build_crd, model_schema
from fabricfit.fabric.schemes import NAMES as _SCHEMES
from fabricfit.workloads import KINDS as _KINDS
from unit.api.apiserver import apply_defaults, failed_rules, schema_errors

Node = tuple[str, dict[str, Any]]
FORBIDDEN = {
    "$ref",
    "$defs",
    "definitions",
    "dependencies",
    "patternProperties",
    "readOnly",
    "uniqueItems",
    "title",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "const",
    "nullable",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
# Standard fields every CRD declares loosely; the API server owns their validation.
EXEMPT = {".apiVersion", ".kind", ".metadata"}

REGISTRIES = Registries(_SCHEMES, tuple(_KINDS))


def walk(schema: dict[str, Any], path: str = "") -> Iterator[Node]:
    yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from walk(sub, f"{path}.{name}")
    if "items" in schema:
        yield from walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], f"{path}{{}}")


def nodes(schema: dict[str, Any]) -> list[Node]:
    return [(p, n) for p, n in walk(schema) if p not in EXEMPT]


def resolve(schema: dict[str, Any], json_path: str) -> dict[str, Any]:
    node = schema
    for part in json_path.strip(".").split("."):
        node = node["properties"][part.split("[", 1)[0]]
        if "[" in part:
            node = node["items"]
    return node


def test_names_scope_and_version() -> None:
    crd = build_crd(REGISTRIES)
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == "trainingtopologies.fabricfit.dev"
    spec = crd["spec"]
    assert spec["group"] == constants.GROUP and spec["scope"] == "Namespaced"
    names = spec["names"]
    assert (names["kind"], names["plural"], names["singular"]) == (
        "TrainingTopology",
        "trainingtopologies",
        "trainingtopology",
    )
    assert names["shortNames"] == ["tt"] and names["categories"] == ["fabricfit"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_printer_columns_resolve_into_the_schema(schema: dict[str, Any]) -> None:
    columns = build_crd(REGISTRIES)["spec"]["versions"][0]["additionalPrinterColumns"]
    default_view = [(c["name"], c["type"]) for c in columns if c.get("priority", 0) == 0]
    assert default_view == [
        ("Workload", "string"),
        ("World", "integer"),
        ("Status", "string"),
        ("Step-Comm", "string"),
        ("Efficiency", "string"),
        ("Age", "date"),
    ]
    assert all(column.get("description") for column in columns), "a column lacks a description"
    for column in columns:
        path = column["jsonPath"].split("[?", 1)[0]
        if path == ".metadata.creationTimestamp":
            continue
        node = resolve(schema, path)
        if "[?" in column["jsonPath"]:
            node = node["items"]["properties"]["reason"]
        assert node["type"] == column["type"], column


def test_every_status_field_is_described(schema: dict[str, Any]) -> None:
    undescribed = [
        path for path, node in nodes(schema["properties"]["status"]) if not node.get("description")
    ]
    assert undescribed == []


@pytest.mark.parametrize("part", ["spec", "status"])
def test_schema_is_structural(part: str, schema: dict[str, Any]) -> None:
    for path, node in nodes(schema["properties"][part]):
        assert node.get("type") in TYPES, path
        assert not FORBIDDEN & node.keys(), (path, FORBIDDEN & node.keys())
        assert not isinstance(node.get("additionalProperties"), bool), path
        assert not ("additionalProperties" in node and "properties" in node), path
        if node["type"] == "object" and "properties" not in node:
            assert "additionalProperties" in node or node.get(
                "x-kubernetes-preserve-unknown-fields"
            ), path


@pytest.mark.parametrize("part", ["spec", "status"])
def test_schema_is_bounded(part: str, schema: dict[str, Any]) -> None:
    for path, node in nodes(schema["properties"][part]):
        kind = node["type"]
        if kind == "string" and "enum" not in node:
            assert "maxLength" in node, path
        elif kind == "array":
            assert "maxItems" in node, path
        elif kind in ("integer", "number"):
            assert "minimum" in node and "maximum" in node, path
            # The API server holds bounds as float64; integer bounds must convert back exactly.
            assert abs(node["minimum"]) <= 2**53 and abs(node["maximum"]) <= 2**53, path
        elif kind == "object" and "additionalProperties" in node:
            assert "maxProperties" in node, path


def test_every_default_validates_against_its_node(spec_schema: dict[str, Any]) -> None:
    defaults = [(p, n) for p, n in nodes(spec_schema) if "default" in n]
    assert {p for p, _ in defaults} >= {".parallelism", ".placement"}
    # gpusPerPod has none: omitted, the operator takes the workload's GPU request.
    assert ".gpusPerPod" not in {p for p, _ in defaults}
    for path, node in defaults:
        # As the API server checks a default: literally, against the schema and the CEL rules.
        assert schema_errors(node, node["default"]) == [], path
        assert failed_rules(node, node["default"]) == [], path
    assert apply_defaults(spec_schema, {})["parallelism"] == {
        "tensor": 1,
        "pipeline": 1,
        "data": 1,
        "expert": 1,
        "context": 1,
    }


def test_status_has_no_defaults(status_schema: dict[str, Any]) -> None:
    assert [p for p, n in nodes(status_schema) if "default" in n] == []


def test_list_markers(status_schema: dict[str, Any]) -> None:
    props = status_schema["properties"]
    for name, key in [("conditions", "type"), ("pods", "index"), ("reservation", "node")]:
        assert props[name]["x-kubernetes-list-type"] == "map"
        assert props[name]["x-kubernetes-list-map-keys"] == [key]
        assert key in props[name]["items"]["required"]
    assert props["conditions"]["maxItems"] == 16
    assert props["degradedRanks"]["x-kubernetes-list-type"] == "set"


def test_kopf_bookkeeping_is_preserved_and_nothing_else(schema: dict[str, Any]) -> None:
    preserved = [p for p, n in walk(schema) if n.get("x-kubernetes-preserve-unknown-fields")]
    assert preserved == [".status.kopf"]


def test_rule_field_paths_exist(schema: dict[str, Any]) -> None:
    rules = [(n, r) for _, n in walk(schema) for r in n.get("x-kubernetes-validations", [])]
    assert len(rules) >= 12
    for node, rule in rules:
        assert set(rule) <= {"rule", "message", "messageExpression", "fieldPath", "reason"}
        if "fieldPath" in rule:
            resolve(node, rule["fieldPath"])  # KeyError when the path is not in the schema


def test_unknown_fields_and_out_of_range_values_are_rejected(schema: dict[str, Any]) -> None:
    base = {
        "apiVersion": "fabricfit.dev/v1alpha1",
        "kind": "TrainingTopology",
        "metadata": {"name": "x"},
        "spec": {"workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "x"}},
    }
    assert schema_errors(schema, base) == []
    for spec_change in (
        {"gpusPerPod": 65},
        {"parallelism": {"tensor": 0}},
        {"rankOrder": "tp-dp"},
        {"placement": {"mode": "yolo"}},
        {"workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "Bad_Name"}},
    ):
        assert schema_errors(schema, {**base, "spec": {**base["spec"], **spec_change}}), spec_change
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**base, "status": {"summary": "Running"}}, schema)


class _Inner(BaseModel):
    size: int = Field(default=1, ge=1, le=9)


class _Demo(BaseModel):
    model_config = {"extra": "forbid"}

    labels: dict[str, str] | None = Field(default=None, max_length=4)
    inner: _Inner = Field(default_factory=_Inner, description="An\n   inner   model.")
    maybe: _Inner | None = None


class _Union(BaseModel):
    either: int | str = 0


def test_converter_inlines_refs_and_unwraps_optionals() -> None:
    converted = model_schema(_Demo, keep_defaults=True)
    assert converted == {
        "type": "object",
        "properties": {
            "labels": {
                "type": "object",
                "maxProperties": 4,
                "additionalProperties": {"type": "string"},
            },
            "inner": {
                "type": "object",
                "description": "An inner model.",
                "default": {"size": 1},
                "properties": {
                    "size": {"type": "integer", "default": 1, "minimum": 1, "maximum": 9}
                },
            },
            "maybe": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer", "default": 1, "minimum": 1, "maximum": 9}
                },
            },
        },
    }
    assert "default" not in str(model_schema(_Demo, keep_defaults=False))


def test_converter_refuses_unions_a_crd_cannot_express() -> None:
    with pytest.raises(ValueError, match="cannot express"):
        model_schema(_Union, keep_defaults=True)
