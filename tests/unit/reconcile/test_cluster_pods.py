"""Every bound pod kopf does not watch: list (in pages), follow the watch, relist on 410, skip
the labelled pods kopf watches itself (in its namespaces), and refuse namespaced mode clearly
without cluster-wide pod reads. The node mirror is the same Mirror."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.handlers.lifecycle import POD_SELECTOR, configure_settings
from fabricfit.kube.mirror import Mirror
from fabricfit.kube.rest import ApiError
from fabricfit.reconcile.cluster_pods import (
    ClusterPods,
    ClusterPodsForbiddenError,
    require_cluster_pods,
)
from fabricfit.reconcile.inventory import node_entry


def pod(
    ns: str, name: str, node: str | None = "n1", version: str = "1", ours: bool = False
) -> dict[str, Any]:
    labels = {TOPOLOGY_LABEL: "job"} if ours else {}
    return {
        "metadata": {"namespace": ns, "name": name, "resourceVersion": version, "labels": labels},
        "spec": {"nodeName": node, "containers": []},
        "status": {"phase": "Running"},
    }


class FakeRest:
    def __init__(
        self, items: list[dict[str, Any]], streams: list[list[dict[str, Any]]], page: int = 0
    ) -> None:
        self.items = items
        self.streams = streams
        self.page = page or len(items) or 1
        self.lists = 0
        self.paths: list[str] = []
        self.watched_from: list[str] = []

    async def request(self, method: str, path: str) -> dict[str, Any]:
        self.paths.append(path)
        start = int(path.split("continue=")[1]) if "continue=" in path else 0
        if not start:
            self.lists += 1
        end = start + self.page
        meta = {"resourceVersion": "10" if not start else "99"}
        if end < len(self.items):
            meta["continue"] = str(end)
        return {"metadata": meta, "items": self.items[start:end]}

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
        [pod("tenant", "a"), pod("mine", "skip", ours=True), pod("mine", "other tenant")],
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
    assert [p["metadata"]["name"] for p in watcher.pods()] == ["other tenant", "b"]
    assert rest.watched_from == ["10", "13"]  # resumes after the last event seen
    assert all("fieldSelector=spec.nodeName%21%3D" in path for path in rest.paths)


def test_all_namespaces_skips_only_our_labelled_pods() -> None:
    rest = FakeRest([pod("a", "ours", ours=True), pod("b", "tenant"), pod("c", "x", ours=True)], [])
    watcher = ClusterPods(rest, ())  # type: ignore[arg-type]
    run_until_done(watcher)
    assert [p["metadata"]["name"] for p in watcher.pods()] == ["tenant"]


def test_the_node_mirror_lists_every_page_and_watches_from_the_first_version() -> None:
    nodes = [{"metadata": {"name": f"n{i}", "labels": {"x": "y"}}} for i in range(7)]
    update = {"metadata": {"name": "n3", "labels": {"x": "z"}, "resourceVersion": "12"}}
    rest = FakeRest(nodes, [[{"type": "MODIFIED", "object": update}]], page=3)
    mirror = Mirror(rest, ("v1", "nodes"), node_entry)  # type: ignore[arg-type]
    run_until_done(mirror)
    assert rest.lists == 1 and len(rest.paths) == 3  # 3 + 3 + 1 items
    assert len(mirror) == 7 and mirror.synced.is_set()
    assert rest.watched_from == ["10", "12"]  # the list's version, not a later page's
    labels = {n["metadata"]["name"]: n["metadata"]["labels"]["x"] for n in mirror.values()}
    assert labels["n3"] == "z" and labels["n0"] == "y"


def test_kopf_watches_only_our_pods() -> None:
    import kopf

    settings = kopf.OperatorSettings()
    configure_settings(settings)
    pods = kopf.Resource("", "v1", "pods")
    nodes = kopf.Resource("", "v1", "nodes")
    assert settings.watching.label_selectors.collect(pods) == [POD_SELECTOR]
    assert POD_SELECTOR == TOPOLOGY_LABEL
    assert settings.watching.label_selectors.collect(nodes) == []


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
