"""TrainingTopologies as the operator and ``fabricfit release`` read and write them."""

from __future__ import annotations

from typing import Any

from fabricfit.api.constants import GROUP, PLURAL, VERSION
from fabricfit.kube.rest import Rest, path_for

API_VERSION = f"{GROUP}/{VERSION}"


async def read_topology(rest: Rest, namespace: str, name: str) -> dict[str, Any] | None:
    """One TrainingTopology, or None when it is gone."""
    return await rest.get(path_for(API_VERSION, PLURAL, namespace, name))


async def list_topologies(rest: Rest, namespace: str | None) -> list[dict[str, Any]]:
    """Every TrainingTopology of ``namespace`` (None: of the cluster)."""
    return await rest.list(path_for(API_VERSION, PLURAL, namespace))


async def patch_topology(
    rest: Rest, namespace: str, name: str, ops: list[dict[str, Any]]
) -> dict[str, Any]:
    """Apply a (guarded) JSON Patch to one TrainingTopology (its metadata, e.g. finalizers)."""
    return await rest.patch(path_for(API_VERSION, PLURAL, namespace, name), ops, "json")


async def patch_status(
    rest: Rest, namespace: str, name: str, status: dict[str, Any]
) -> dict[str, Any]:
    """Merge-patch the status subresource of a TrainingTopology."""
    path = path_for(API_VERSION, PLURAL, namespace, name, "status")
    return await rest.patch(path, {"status": status}, "merge")
