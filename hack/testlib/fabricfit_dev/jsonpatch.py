"""A tiny RFC 6902 JSON Patch applier (add, remove, replace, test): the in-memory API server
(``fabricfit_dev.memapi``) applies the operator's JSON patches with it, and tests check them."""

import copy
from typing import Any


class PatchError(Exception):
    """The patch does not apply (missing path, failed test, bad index)."""


def _parent(doc: Any, pointer: str) -> tuple[Any, str]:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    for part in parts[:-1]:
        try:
            doc = doc[int(part)] if isinstance(doc, list) else doc[part]
        except (KeyError, IndexError, ValueError, TypeError) as e:
            raise PatchError(f"no {pointer}") from e
    return doc, parts[-1]


def apply_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """``doc`` with ``ops`` applied atomically (a copy; ``doc`` is left untouched)."""
    doc = copy.deepcopy(doc)
    for op in ops:
        parent, key = _parent(doc, op["path"])
        is_list, adding = isinstance(parent, list), op["op"] == "add"
        index: Any = (len(parent) if key == "-" else int(key)) if is_list else key
        if is_list and not 0 <= index <= len(parent) - (not adding):
            raise PatchError(f"index out of range: {op['path']}")
        if not is_list and (not isinstance(parent, dict) or (not adding and key not in parent)):
            raise PatchError(f"no {op['path']}")
        if op["op"] == "test" and parent[index] != op["value"]:
            raise PatchError(f"test failed: {op['path']}")
        if op["op"] in ("remove", "replace"):
            del parent[index]
        if op["op"] in ("add", "replace"):
            value = copy.deepcopy(op["value"])
            if is_list:
                parent.insert(index, value)
            else:
                parent[index] = value
    return doc
