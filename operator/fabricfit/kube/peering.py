"""kopf peering for replicas of one Deployment: who acts, and the object they meet in.

kopf pauses every replica that sees a live peer of higher priority and, on equal priorities,
pauses *all* of them. Replicas of a Deployment share their arguments, so ``--priority oldest``
derives a distinct priority from the process start time: the longest-running replica acts and a
newly started one (a rolling update's surge pod, a restarted container) waits as the standby.
A new pod therefore never preempts a working one, and there are never two acting replicas
while a rollout replaces them one by one.

kopf only patches the (Cluster)KopfPeering object and never creates it; Helm cannot create it in
the same release as its CRD (no REST mapping before the CRD exists), so ``ensure_peering``
creates it at startup when it is missing.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from fabricfit.kube.rest import ApiError, Rest, path_for

PEERING_API = "kopf.dev/v1"
OLDEST = "oldest"
# kopf's default is 60 s: a killed replica would hold the standby back for a minute.
PEERING_LIFETIME_SECONDS = 15


def parse_priority(text: str, *, now_seconds: float | None = None) -> int:
    """An integer priority, or ``oldest``: minus the start time in microseconds (earlier is
    higher; two processes starting within the same microsecond are not a practical concern)."""
    if text == OLDEST:
        moment = time.time() if now_seconds is None else now_seconds
        return -int(moment * 1_000_000)
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"--priority must be an integer or {OLDEST!r}, not {text!r}") from None


async def ensure_peering(rest: Rest, name: str, namespaces: Sequence[str]) -> list[str]:
    """Create the peering object(s) kopf will use when absent; returns what was created.

    Cluster-wide operators meet in a ClusterKopfPeering, namespaced ones in a KopfPeering in each
    watched namespace (kopf's rule)."""
    targets: list[tuple[str, str, str | None]]
    if namespaces:
        targets = [("kopfpeerings", "KopfPeering", ns) for ns in namespaces]
    else:
        targets = [("clusterkopfpeerings", "ClusterKopfPeering", None)]
    created = []
    for plural, kind, namespace in targets:
        if await rest.get(path_for(PEERING_API, plural, namespace, name)) is not None:
            continue
        body = {"apiVersion": PEERING_API, "kind": kind, "metadata": {"name": name}}
        try:
            await rest.create(path_for(PEERING_API, plural, namespace), body)
        except ApiError as err:
            if err.status != 409:  # another replica created it first
                raise
            continue
        created.append(f"{kind} {namespace + '/' if namespace else ''}{name}")
    return created
