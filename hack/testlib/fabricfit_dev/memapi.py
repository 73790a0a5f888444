"""An in-memory stand-in for the API server behind ``kube.rest.Rest``, for the shell's unit
tests and ``benchmarks/operator_path.py`` (the real reconcile path without a control plane).

Objects live under their API paths; GET, LIST (with a label selector), create, delete, merge
patches and JSON patches behave like the API server's for what the operator sends, and every
write bumps the ``resourceVersion``. ``fail`` makes the next write to a path fail with an
``ApiError``; ``refuse`` makes every write to a path fail (a webhook or validation that keeps
saying no).
"""

from __future__ import annotations

import builtins
import copy
from collections import Counter
from typing import Any

from fabricfit.kube.rest import ApiError
from fabricfit_dev.jsonpatch import PatchError, apply_patch


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


class FakeApi:
    """Duck-typed ``Rest``: the operator's only door to the cluster."""

    def __init__(self, *objects: tuple[str, dict[str, Any]]) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str, Any]] = []  # (path, patch kind, body)
        self.fail: dict[str, ApiError] = {}
        self.refuse: dict[str, ApiError] = {}
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self._version = 100
        for path, obj in objects:
            self.put(path, obj)

    def put(self, path: str, obj: dict[str, Any]) -> None:
        self._version += 1
        stored = copy.deepcopy(obj)
        stored.setdefault("metadata", {})["resourceVersion"] = str(self._version)
        self.objects[path] = stored

    async def get(self, path: str) -> dict[str, Any] | None:
        found = self.objects.get(path)
        return copy.deepcopy(found) if found is not None else None

    async def list(self, path: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        wanted = dict(p.split("=", 1) for p in label_selector.split(",")) if label_selector else {}
        return [
            copy.deepcopy(obj)
            for key, obj in sorted(self.objects.items())
            if key.startswith(path + "/") and "/" not in key[len(path) + 1 :]
            and wanted.items() <= ((obj.get("metadata") or {}).get("labels") or {}).items()
        ]  # fmt: skip

    async def patch(self, path: str, body: Any, kind: str = "merge") -> dict[str, Any]:
        self.writes.append((path, kind, copy.deepcopy(body)))
        if path in self.fail:
            raise self.fail.pop(path)
        if path in self.refuse:
            raise self.refuse[path]
        target = path.removesuffix("/status")
        if target not in self.objects:
            raise ApiError(404, "NotFound", f"{target} not found")
        current = self.objects[target]
        if kind == "json":
            try:
                updated = apply_patch(current, body)
            except PatchError as err:
                raise ApiError(422, "Invalid", str(err)) from err
        else:
            updated = merge(current, body)
        self.put(target, updated)
        return copy.deepcopy(self.objects[target])

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.writes.append((path, "create", copy.deepcopy(body)))
        if path in self.refuse:
            raise self.refuse[path]
        target = f"{path}/{body['metadata']['name']}"
        if target in self.objects:
            raise ApiError(409, "AlreadyExists", f"{target} already exists")
        self.put(target, body)
        return copy.deepcopy(self.objects[target])

    async def request(
        self, method: str, path: str, *, body: Any = None, **_: Any
    ) -> dict[str, Any]:
        """DELETE only (the other verbs have their own methods); DeleteOptions' preconditions
        (uid, resourceVersion) are checked as the API server does (409 Conflict)."""
        assert method == "DELETE", method
        self.writes.append((path, "delete", copy.deepcopy(body)))
        found = self.objects.get(path)
        if found is None:
            raise ApiError(404, "NotFound", f"{path} not found")
        meta = found.get("metadata") or {}
        for key, wanted in ((body or {}).get("preconditions") or {}).items():
            if meta.get(key) != wanted:
                raise ApiError(409, "Conflict", f"Precondition failed: {key} {wanted}")
        del self.objects[path]
        return {}

    async def close(self) -> None:
        return None

    def writes_to(self, path: str) -> builtins.list[Any]:
        return [body for p, _kind, body in self.writes if p == path]
