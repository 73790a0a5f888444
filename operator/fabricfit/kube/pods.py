"""Pods as the operator and ``fabricfit release`` change them: pin, ungate, label, list, and
delete a pinned pod that can never bind so its controller recreates it (``delete_pod``).

Every write here is one PATCH; a JSON Patch carries its own ``test`` guards (built by
:mod:`fabricfit.render.pods`), so a pod that changed underneath fails the write instead of being
overwritten. Callers decide which API errors are races to ignore (``RACES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricfit.kube.rest import Rest, path_for

#: Answers to a guarded write meaning "the pod changed (or went) underneath us".
RACES = (404, 409, 422)


async def patch_pod(
    rest: Rest, namespace: str, name: str, ops: list[dict[str, Any]]
) -> dict[str, Any]:
    """Apply a (guarded) JSON Patch to one pod."""
    return await rest.patch(path_for("v1", "pods", namespace, name), ops, "json")


async def label_pod(
    rest: Rest, namespace: str, name: str, labels: Mapping[str, str]
) -> dict[str, Any]:
    """Merge ``labels`` into one pod's labels."""
    body = {"metadata": {"labels": dict(labels)}}
    return await rest.patch(path_for("v1", "pods", namespace, name), body, "merge")


async def list_pods(rest: Rest, namespace: str | None) -> list[dict[str, Any]]:
    """Every pod of ``namespace`` (None: of the cluster)."""
    return await rest.list(path_for("v1", "pods", namespace))


async def read_pod(rest: Rest, namespace: str, name: str) -> dict[str, Any] | None:
    """One pod, or None when it is gone."""
    return await rest.get(path_for("v1", "pods", namespace, name))


async def delete_pod(
    rest: Rest, namespace: str, name: str, *, uid: str, resource_version: str
) -> None:
    """Delete one pod only if it is still the object read (``uid``) and unchanged since
    (``resourceVersion``): a pod bound or changed meanwhile fails with 409 Conflict instead."""
    options = {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": uid, "resourceVersion": resource_version},
    }
    await rest.request("DELETE", path_for("v1", "pods", namespace, name), body=options)
