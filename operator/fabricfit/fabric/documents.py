"""Parse ``kubectl get … -o json|yaml`` output into plain object dicts (pure, bounded, total).

Theory of operation
-------------------
``fabricfit plan`` reads node and pod dumps that can hold thousands of objects, so JSON, which
``kubectl -o json`` produces and :mod:`json` parses an order of magnitude faster than YAML, is
tried first whenever the text looks like JSON. Everything else goes to PyYAML's C loader when it
is built (``CSafeLoader``), else the pure-Python ``SafeLoader``. A document may be a ``List``
with ``items``, a single object, a JSON array of objects, or a multi-document YAML stream of
either.

Parsing is *total*: whatever the bytes, the result is objects or one :class:`DocumentError`
with a one-line message (the CLI prints it as is, exit 2). And it is *bounded*:

* bytes are decoded strictly (UTF-8, or UTF-16/32 with a byte-order mark, as PowerShell writes);
* an integer of more than :data:`MAX_INTEGER_DIGITS` digits is refused before Python converts
  it (conversion is quadratic, and Python refuses 4,300 digits with a bare ``ValueError``);
* an explicit YAML tag whose value does not parse (``!!int x``, ``!!bool maybe``,
  ``!!timestamp x``) is an error at its line and column, not a stray ``KeyError``;
* YAML aliases share one object, so a "billion laughs" document is small in memory until
  something walks it; the expanded size is counted (each shared object once, multiplied by its
  references) and a document whose aliases add more than :data:`MAX_ALIAS_EXPANSION` values,
  or refer to themselves, is refused; merge keys (``<<``) copy entries and share that budget.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from fabricfit.fabric.objects import kind_of, shorten

# CSafeLoader parses ~5x faster; it is absent when PyYAML was built without libyaml.
_BASE_LOADER: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Far beyond any number in a Kubernetes object (int64 has 19 digits).
MAX_INTEGER_DIGITS = 100
#: Values YAML aliases and merge keys may add to a document beyond the values written in it.
MAX_ALIAS_EXPANSION = 1_000_000
_BOMS = (
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
_INT_TAG = "tag:yaml.org,2002:int"


class DocumentError(ValueError):
    """The text is not a Kubernetes object, List, or stream of them."""


def decode_text(data: bytes) -> str:
    """``data`` as text: UTF-8, or UTF-16/32 when a byte-order mark says so; strict."""
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as err:
        raise DocumentError(
            f"not {encoding.upper()} text (bad byte at offset {err.start})"
        ) from None


def load_objects(text: str) -> list[dict[str, Any]]:
    """The objects in ``text``: the ``items`` of Lists and single objects, in document order."""
    if not text.strip():
        raise DocumentError("the document is empty")
    return _flatten(_parse(text))


def load_document(text: str, what: str = "the input") -> object:
    """The one YAML (or JSON) document in ``text``, parsed with the same bounds as
    :func:`load_objects` (aliases, merge keys, integer digits, tags, nesting); None when it is
    empty. Any other kind of document (a fabric profile) is the caller's to check."""
    documents = [d for d in _parse(text) if d is not None] if text.strip() else []
    if len(documents) > 1:
        raise DocumentError(f"{what} holds {len(documents)} YAML documents, expected one")
    return documents[0] if documents else None


def _parse(text: str) -> list[object]:
    looks_like_json = text.lstrip()[:1] in ("{", "[")
    json_error: json.JSONDecodeError | None = None
    if looks_like_json:
        try:
            return [json.loads(text, parse_int=_json_int)]
        except json.JSONDecodeError as error:
            json_error = error
        except RecursionError:
            raise DocumentError("the JSON document is nested too deeply") from None
    try:
        documents = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as error:
        if json_error is not None:
            raise DocumentError(
                f"invalid JSON at line {json_error.lineno}, column {json_error.colno}: "
                f"{json_error.msg}"
            ) from None
        raise DocumentError(_describe_yaml_error(error)) from None
    except RecursionError:
        raise DocumentError("the YAML document is nested too deeply") from None
    if "*" in text or "<<" in text:  # only aliases and merge keys can share objects
        check_expansion(documents)
    return documents


def _json_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise DocumentError(f"a number has more than {MAX_INTEGER_DIGITS} digits")
    return int(digits)


def _describe_yaml_error(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    problem = shorten_text(problem, 120)
    if mark is not None:
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {problem}"
    return f"invalid YAML: {problem}"


def shorten_text(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Loader(_BASE_LOADER):  # type: ignore[misc]
    """The safe loader, with every constructor failure a marked YAML error and merge keys
    counted against the alias budget."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.merged_values = 0

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if node.tag == _INT_TAG and len(str(node.value)) > MAX_INTEGER_DIGITS + 2:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number has more than {MAX_INTEGER_DIGITS} digits", node.start_mark
            )
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError, IndexError):
            tag = node.tag.rsplit(":", 1)[-1]
            value = shorten(node.value) if isinstance(node.value, str) else "this node"
            raise yaml.constructor.ConstructorError(
                None, None, f"{value} is not a valid !!{tag}", node.start_mark
            ) from None

    def flatten_mapping(self, node: yaml.MappingNode) -> None:
        before = len(node.value)
        super().flatten_mapping(node)
        self.merged_values += max(0, len(node.value) - before)
        if self.merged_values > MAX_ALIAS_EXPANSION:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"merge keys (<<) add more than {MAX_ALIAS_EXPANSION:,} values",
                node.start_mark,
            )


def check_expansion(documents: list[object]) -> None:
    """Refuse documents whose shared (aliased) objects expand beyond the budget, or that
    contain themselves. Walks each distinct object once (iteratively: no recursion limit)."""
    size: dict[int, int] = {}
    written = sum(_expanded_size(root, size) for root in documents)
    expanded = sum(size.get(id(d), 1) for d in documents)
    if expanded - written > MAX_ALIAS_EXPANSION:
        raise DocumentError(
            f"YAML aliases expand the document by more than {MAX_ALIAS_EXPANSION:,} values"
        )


def _children(value: object) -> list[object]:
    if isinstance(value, Mapping):
        return [*value.keys(), *value.values()]
    if isinstance(value, list | tuple | set):
        return list(value)
    return []


def _expanded_size(root: object, size: dict[int, int]) -> int:
    """Fill ``size[id(x)]`` (values under x, aliases expanded) for every container under
    ``root``; return the values written out once (distinct containers and their scalars)."""
    if id(root) in size:
        return 0
    if not isinstance(root, Mapping | list | tuple | set):
        return 1
    written = 0
    active: set[int] = set()
    stack: list[tuple[object, bool]] = [(root, False)]
    while stack:
        value, done = stack.pop()
        key = id(value)
        children = _children(value)
        if done:
            active.discard(key)
            size[key] = 1 + sum(size.get(id(c), 1) for c in children)
            continue
        if key in active:
            raise DocumentError("a YAML alias refers to the value that contains it")
        if key in size:
            continue
        containers = [c for c in children if isinstance(c, Mapping | list | tuple | set)]
        written += 1 + len(children) - len(containers)
        active.add(key)
        stack.append((value, True))
        stack.extend((c, False) for c in containers)
    return written


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
            raise DocumentError(
                f"document {number}: items is {kind_of(document['items'])}, not a list"
            )
        elif isinstance(document, dict):
            objects.append(document)
        else:
            raise DocumentError(
                f"document {number} is {kind_of(document)}, not a Kubernetes object or List"
            )
    return objects


def _objects(items: list[object], where: str) -> list[dict[str, Any]]:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise DocumentError(f"{where}[{index}] is {kind_of(item)}, not a Kubernetes object")
    return [item for item in items if isinstance(item, dict)]


def require_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """``objects``, all of ``kind`` (``kubectl get`` writes it on every object)."""
    for index, obj in enumerate(objects):
        found = obj.get("kind")
        if found is None:
            raise DocumentError(f"object {index + 1} has no kind, expected {kind}")
        if found != kind:
            what = shorten(found) if isinstance(found, str) else kind_of(found)
            raise DocumentError(f"object {index + 1} has kind {what}, expected {kind}")
    return objects
