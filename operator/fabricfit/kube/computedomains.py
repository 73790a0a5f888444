"""Reading, creating and deleting NVIDIA ComputeDomains (``resource.nvidia.com``).

The ComputeDomain CRD comes with NVIDIA's DRA driver for GPUs and is absent from most clusters;
:func:`served` asks the API server's discovery whether it serves the kind, so the reconcile can
say so in a condition instead of failing on a 404.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricfit.kube.rest import ApiError, Rest, path_for
from fabricfit.render.computedomain import CD_API_VERSION, CD_PLURAL


async def served(rest: Rest) -> bool:
    """Whether the API server serves ComputeDomains at the version fabricfit writes."""
    found = await rest.get(f"/apis/{CD_API_VERSION}")
    resources = (found or {}).get("resources") or []
    return any(isinstance(r, Mapping) and r.get("name") == CD_PLURAL for r in resources)


async def read(rest: Rest, namespace: str, name: str) -> dict[str, Any] | None:
    return await rest.get(path_for(CD_API_VERSION, CD_PLURAL, namespace, name))


async def create(rest: Rest, body: Mapping[str, Any]) -> dict[str, Any]:
    """Create ``body``; an existing one of the same name (a race) is read back instead."""
    namespace = str(body["metadata"]["namespace"])
    try:
        return await rest.create(path_for(CD_API_VERSION, CD_PLURAL, namespace), body)
    except ApiError as err:
        if err.status != 409:
            raise
    found = await read(rest, namespace, str(body["metadata"]["name"]))
    return found or dict(body)


async def delete(rest: Rest, namespace: str, name: str) -> bool:
    """Delete one ComputeDomain; False when it was already gone."""
    try:
        await rest.request("DELETE", path_for(CD_API_VERSION, CD_PLURAL, namespace, name))
    except ApiError as err:
        if err.status == 404:
            return False
        raise
    return True
