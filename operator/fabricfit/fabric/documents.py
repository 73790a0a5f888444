"""Parse ``kubectl get … -o json|yaml`` output into plain object dicts (pure).

Theory of operation
-------------------
``fabricfit plan`` reads node and pod dumps that can hold thousands of objects, so JSON, which
``kubectl -o json`` produces and :mod:`json` parses an order of magnitude faster than YAML, is
tried first whenever the text looks like JSON. Everything else goes to PyYAML's C loader when it
is built (``CSafeLoader``), else the pure-Python ``SafeLoader``. A document may be a ``List``
with ``items``, a single object, a JSON array of objects, or a multi-document YAML stream of
either. Any failure becomes one :class:`DocumentError` with a one-line message, which the CLI
prints as is (exit 2, no traceback).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import yaml

# CSafeLoader parses ~5x faster; it is absent when PyYAML was built without libyaml.
_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DocumentError(ValueError):
    """The text is not a Kubernetes object, List, or stream of them."""


def load_objects(text: str) -> list[dict[str, Any]]:
    """The objects in ``text``: the ``items`` of Lists and single objects, in document order."""
    if not text.strip():
        raise DocumentError("the document is empty")
    return _flatten(_parse(text))


def _parse(text: str) -> list[object]:
    looks_like_json = text.lstrip()[:1] in ("{", "[")
    json_error: json.JSONDecodeError | None = None
    if looks_like_json:
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as error:
            json_error = error
        except RecursionError:
            raise DocumentError("the JSON document is nested too deeply") from None
    try:
        return list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as error:
        if json_error is not None:
            raise DocumentError(
                f"invalid JSON at line {json_error.lineno}, column {json_error.colno}: "
                f"{json_error.msg}"
            ) from None
        raise DocumentError(_describe_yaml_error(error)) from None
    except RecursionError:
        raise DocumentError("the YAML document is nested too deeply") from None


def _describe_yaml_error(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if mark is not None:
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"invalid YAML: {problem}"


def _flatten(documents: Iterable[object]) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for number, document in enumerate(documents, start=1):
        if document is None:  # an empty YAML document, e.g. a trailing "---"
            continue
        if isinstance(document, list):
            objects.extend(_objects(document, f"document {number}"))
        elif isinstance(document, dict) and isinstance(document.get("items"), list):
            objects.extend(_objects(document["items"], f"document {number} items"))
        elif isinstance(document, dict) and "items" in document:
            raise DocumentError(f"document {number}: items is not a list")
        elif isinstance(document, dict):
            objects.append(document)
        else:
            kind = type(document).__name__
            raise DocumentError(f"document {number} is a {kind}, not a Kubernetes object or List")
    return objects


def _objects(items: list[object], where: str) -> list[dict[str, Any]]:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            kind = type(item).__name__
            raise DocumentError(f"{where}[{index}] is a {kind}, not a Kubernetes object")
    return [item for item in items if isinstance(item, dict)]
