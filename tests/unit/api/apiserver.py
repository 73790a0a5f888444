"""What the API server does with a custom resource, in miniature: default it from the structural
schema, validate it (``jsonschema``), and evaluate the CEL rules (``cel-python``).

These mirror the apiextensions semantics closely enough to test the generated CRD without a
cluster: defaults fill absent fields top-down (a defaulted ``{}`` gets its nested defaults),
then ``x-kubernetes-validations`` run on every present node, transition rules (``oldSelf``)
only where an old value exists, and an evaluation error counts as a failure.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import celpy
import jsonschema
import yaml

from fabricfit.api.crd import Registries, build_crd
from fabricfit.fabric.schemes import NAMES as _SCHEMES
from fabricfit.workloads import KINDS as _KINDS

ROOT = Path(__file__).resolve().parents[3]
REGISTRIES = Registries(_SCHEMES, tuple(_KINDS))
SAMPLES = ROOT / "deploy" / "samples"
CEL_ENV = celpy.Environment()


@functools.cache
def _program(rule: str) -> Any:
    return CEL_ENV.program(CEL_ENV.compile(rule))


def openapi_schema() -> dict[str, Any]:
    version = build_crd(REGISTRIES)["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def apply_defaults(schema: dict[str, Any], value: Any) -> Any:
    """A deep copy of ``value`` with the schema's defaults applied (apiextensions defaulting)."""
    value = copy.deepcopy(value)
    _default_in_place(schema, value)
    return value


def _default_in_place(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                _default_in_place(sub, value[name])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for item in value.values():
                _default_in_place(extra, item)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            _default_in_place(schema["items"], item)


def failed_rules(schema: dict[str, Any], value: Any, old: Any = None) -> list[str]:
    """Messages of the CEL rules ``value`` violates, in document order."""
    return list(_failures(schema, value, old))


def _failures(schema: dict[str, Any], value: Any, old: Any) -> Iterator[str]:
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"] and old is None:
            continue
        if not _holds(rule["rule"], value, old):
            yield _message(rule, value)
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                previous = old.get(name) if isinstance(old, dict) else None
                yield from _failures(sub, value[name], previous)
    elif isinstance(value, list) and "items" in schema:
        for item in value:
            yield from _failures(schema["items"], item, None)


def _message(rule: dict[str, Any], value: Any) -> str:
    """``messageExpression``'s string when it has one and it evaluates, else ``message`` (as
    the API server falls back)."""
    expression = rule.get("messageExpression")
    if expression is None:
        return str(rule["message"])
    try:
        program = CEL_ENV.program(CEL_ENV.compile(expression), functions={"format": _format})
        result = program.evaluate({"self": celpy.json_to_cel(value)})
    except celpy.CELEvalError:
        return str(rule["message"])
    return str(result) if isinstance(result, str) else str(rule["message"])


def _format(template: Any, args: Any) -> Any:
    """``string.format(list)`` of CEL's strings extension (which cel-python lacks), for the
    ``%d`` and ``%s`` verbs the CRD's messages use."""
    text = str(template)
    for arg in args:
        text = re.sub(r"%[ds]", lambda _m, arg=arg: str(arg), text, count=1)
    return celpy.celtypes.StringType(text)


def _holds(rule: str, value: Any, old: Any) -> bool:
    activation = {"self": celpy.json_to_cel(value)}
    if old is not None:
        activation["oldSelf"] = celpy.json_to_cel(old)
    try:
        result = _program(rule).evaluate(activation)
    except celpy.CELEvalError:
        return False
    return result is True or (isinstance(result, celpy.celtypes.BoolType) and bool(result))


def schema_errors(schema: dict[str, Any], value: Any) -> list[str]:
    """jsonschema's complaints about ``value`` (formats checked, as the API server does)."""
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    return [error.message for error in validator.iter_errors(value)]


def load_samples() -> list[tuple[str, dict[str, Any]]]:
    """Every document of every ``deploy/samples/*.yaml`` file, with its file name."""
    docs = []
    for path in sorted(SAMPLES.rglob("*.yaml")):  # kueue/: the samples that need Kueue
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc:
                docs.append((path.relative_to(SAMPLES).as_posix(), doc))
    return docs


def sample_topologies() -> list[tuple[str, dict[str, Any]]]:
    return [(name, doc) for name, doc in load_samples() if doc["kind"] == "TrainingTopology"]
