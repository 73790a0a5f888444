"""Defensive access to plain Kubernetes object dicts (pure).

Theory of operation
-------------------
Inputs come from the API server, ``kubectl get -o json|yaml`` dumps, or hand-written YAML, so
any field may be missing or of the wrong type. These helpers return a typed value or a neutral
default instead of raising, which is what lets :func:`build_snapshot` promise never to raise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
