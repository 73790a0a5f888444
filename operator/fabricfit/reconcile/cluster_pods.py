"""Pods of every namespace, for an operator that watches only some (namespaced mode).

GPUs are a cluster-wide resource: a namespaced operator that saw only its own namespaces' pods
would plan onto GPUs another tenant's pods hold, and its pods would stay Pending. kopf watches
everything in the listed namespaces only, so this keeps a read-only copy of the *bound* pods of
all the other namespaces (list, then watch; list again when the watch expires with 410 Gone or
fails), slimmed like kopf's pod index, for the snapshot's GPU accounting. The operator refuses to
start namespaced when it may not list pods cluster-wide (``require_cluster_pods``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from fabricfit.kube.rest import ApiError, Rest
from fabricfit.reconcile.inventory import slim_pod

logger = logging.getLogger(__name__)
PODS_PATH = "/api/v1/pods"
BOUND = {"fieldSelector": "spec.nodeName!="}
WATCH_SECONDS = 300
RETRY_SECONDS = 2.0


class ClusterPodsForbiddenError(Exception):
    """Namespaced mode without read access to pods in every namespace."""


async def require_cluster_pods(rest: Rest, namespaces: tuple[str, ...]) -> None:
    """Fail with a clear message unless pods can be listed in every namespace."""
    try:
        await rest.request("GET", f"{PODS_PATH}?limit=1")
    except ApiError as err:
        if err.status in (401, 403):
            raise ClusterPodsForbiddenError(
                f"namespaced mode ({', '.join(namespaces)}) must list and watch pods in every "
                "namespace (read-only) to count the GPUs other namespaces' pods hold; without "
                "it plans would double-book them. Grant list and watch on pods cluster-wide "
                "(the Helm chart does) or run with --all-namespaces."
            ) from err
        raise


class ClusterPods:
    """Bound pods outside ``watched`` namespaces, kept current by list + watch."""

    def __init__(self, rest: Rest, watched: tuple[str, ...]) -> None:
        self.rest = rest
        self.watched = frozenset(watched)
        self._pods: dict[tuple[str, str], dict[str, Any]] = {}
        self.synced = asyncio.Event()

    def pods(self) -> list[Mapping[str, Any]]:
        return list(self._pods.values())

    async def run(self) -> None:
        while True:
            try:
                version: str | None = await self._relist()
                while version is not None:
                    version = await self._follow(version)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the next list starts over; planning goes on meanwhile
                logger.warning("cluster-wide pod watch failed (%s); listing again", err)
                await asyncio.sleep(RETRY_SECONDS)

    async def _relist(self) -> str:
        page = await self.rest.request("GET", f"{PODS_PATH}?fieldSelector=spec.nodeName%21%3D")
        fresh = {}
        for pod in page.get("items") or []:
            key, slim = self._slim(pod)
            if slim is not None:
                fresh[key] = slim
        self._pods = fresh
        self.synced.set()
        return str((page.get("metadata") or {}).get("resourceVersion") or "")

    async def _follow(self, version: str) -> str | None:
        """Apply one watch request's events; the version to resume from, None to relist."""
        params = {**BOUND, "resourceVersion": version, "timeoutSeconds": str(WATCH_SECONDS),
                  "allowWatchBookmarks": "true"}  # fmt: skip
        async for event in self.rest.watch(PODS_PATH, params):
            kind, obj = event.get("type"), event.get("object") or {}
            if kind == "ERROR":
                return None  # 410 Gone: too old a version
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            key, slim = self._slim(obj)
            if kind == "DELETED" or slim is None:
                self._pods.pop(key, None)
            else:
                self._pods[key] = slim
        return version

    def _slim(self, pod: Mapping[str, Any]) -> tuple[tuple[str, str], dict[str, Any] | None]:
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if key[0] in self.watched:
            return key, None  # kopf's own index has it
        return key, slim_pod(pod)
