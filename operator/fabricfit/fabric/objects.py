"""Defensive access to plain Kubernetes object dicts (pure).

Theory of operation
-------------------
Inputs come from the API server, ``kubectl get -o json|yaml`` dumps, or hand-written YAML, so
any field may be missing or of the wrong type. These helpers return a typed value or a neutral
default instead of raising, which is what lets :func:`build_snapshot` promise never to raise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

_EMPTY: Mapping[str, Any] = {}


def mapping_at(obj: object, *path: str) -> Mapping[str, Any]:
    """The mapping at ``obj[path[0]][path[1]]…``, or an empty one if any step is not a mapping."""
    current: object = obj
    for key in path:
        if not isinstance(current, Mapping):
            return _EMPTY
        current = current.get(key)
    return current if isinstance(current, Mapping) else _EMPTY


def value_at(obj: object, *path: str) -> object:
    """The value at ``path`` (None when missing); the last step may hold any type."""
    parent = mapping_at(obj, *path[:-1])
    return parent.get(path[-1]) if path else obj


def str_at(obj: object, *path: str) -> str | None:
    value = value_at(obj, *path)
    return value if isinstance(value, str) else None


def list_at(obj: object, *path: str) -> Sequence[object]:
    """The list at ``path``, or an empty tuple (strings are not lists here)."""
    value = value_at(obj, *path)
    return value if isinstance(value, list | tuple) else ()


#: Longest echo of user input in a message: enough to recognise a value, never a flood.
MAX_ECHO_CHARS = 40


def kind_of(value: object) -> str:
    """What ``value`` is, in the words of a YAML/JSON document (never a Python type name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, date):  # YAML's !!timestamp (datetime is a date)
        return "a timestamp"
    if isinstance(value, bytes):  # YAML's !!binary
        return "binary data"
    if isinstance(value, set | frozenset):  # YAML's !!set
        return "a set"
    return "a value of an unknown kind"


def shorten(value: object, limit: int = MAX_ECHO_CHARS) -> str:
    """``value`` for a message: a scalar quoted and cut to ``limit`` characters, a container
    named by its kind (its text could be gigabytes: YAML aliases share one object many times)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, str | float):
        text = repr(value)
    elif isinstance(value, int):
        text = _digits(value, limit)
    else:
        return kind_of(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _digits(value: int, limit: int) -> str:
    """Decimal text of ``value`` without building thousands of digits (quadratic in CPython)."""
    if value.bit_length() <= 3 * limit:  # at most ~0.9·limit digits: cheap
        return str(value)
    return f"a number of about {int(value.bit_length() * 0.30103)} digits"
