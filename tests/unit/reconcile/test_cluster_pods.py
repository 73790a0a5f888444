"""Namespaced mode's view of every other namespace: list, follow the watch, relist on 410, skip
the namespaces kopf watches itself, and refuse clearly without cluster-wide pod reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from fabricfit.kube.rest import ApiError
from fabricfit.reconcile.cluster_pods import (
    ClusterPods,
    ClusterPodsForbiddenError,
    require_cluster_pods,
)


def pod(ns: str, name: str, node: str | None = "n1", version: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name, "resourceVersion": version},
        "spec": {"nodeName": node, "containers": []},
        "status": {"phase": "Running"},
    }


class FakeRest:
    def __init__(self, items: list[dict[str, Any]], streams: list[list[dict[str, Any]]]) -> None:
        self.items = items
        self.streams = streams
        self.lists = 0
        self.watched_from: list[str] = []

    async def request(self, method: str, path: str) -> dict[str, Any]:
        self.lists += 1
        return {"metadata": {"resourceVersion": "10"}, "items": self.items}

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[dict[str, Any]]:
        self.watched_from.append(params["resourceVersion"])
        if not self.streams:
            raise asyncio.CancelledError
        for event in self.streams.pop(0):
            yield event


def run_until_done(watcher: ClusterPods) -> None:
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(watcher.run())


def test_list_then_watch_keeps_other_namespaces_bound_pods() -> None:
    rest = FakeRest(
        [pod("tenant", "a"), pod("mine", "skip")],
        [
            [
                {"type": "ADDED", "object": pod("tenant", "b", version="11")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}},
                {"type": "DELETED", "object": pod("tenant", "a", version="13")},
            ],
        ],
    )
    watcher = ClusterPods(rest, ("mine",))  # type: ignore[arg-type]
    run_until_done(watcher)
    assert [p["metadata"]["name"] for p in watcher.pods()] == ["b"]
    assert rest.watched_from == ["10", "13"]  # resumes after the last event seen


def test_an_expired_watch_lists_again() -> None:
    gone = {"type": "ERROR", "object": {"code": 410}}
    rest = FakeRest([pod("tenant", "a")], [[gone]])
    run_until_done(ClusterPods(rest, ()))  # type: ignore[arg-type]
    assert rest.lists == 2


def test_namespaced_without_cluster_wide_pods_is_refused_clearly() -> None:
    class Denied:
        async def request(self, method: str, path: str) -> dict[str, Any]:
            raise ApiError(403, "Forbidden", "pods is forbidden")

    with pytest.raises(ClusterPodsForbiddenError, match="must list and watch pods in every"):
        asyncio.run(require_cluster_pods(Denied(), ("team-a",)))  # type: ignore[arg-type]
