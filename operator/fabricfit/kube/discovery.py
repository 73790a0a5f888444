"""What the API server serves and what it lets us read (discovery and access probes)."""

from __future__ import annotations

from collections.abc import Mapping

from fabricfit.kube.rest import ApiError, Rest, path_for

#: Answers meaning "you may not": the caller reports the missing grant.
FORBIDDEN = (401, 403)


async def served_resources(rest: Rest, api_version: str) -> frozenset[str] | None:
    """The plural names ``group/version`` serves, or None when the API server does not serve
    that group version (404)."""
    try:
        found = await rest.request("GET", f"/apis/{api_version}")
    except ApiError as err:
        if err.status == 404:
            return None
        raise
    resources = found.get("resources") or []
    return frozenset(str(r.get("name")) for r in resources if isinstance(r, Mapping))


async def may_list(rest: Rest, api_version: str, plural: str) -> bool:
    """Whether we may list ``plural`` cluster-wide (one item asked for); False when the API
    server says 401/403, other errors raise."""
    try:
        await rest.request("GET", f"{path_for(api_version, plural)}?limit=1")
    except ApiError as err:
        if err.status in FORBIDDEN:
            return False
        raise
    return True
