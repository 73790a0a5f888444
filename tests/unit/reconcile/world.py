"""A small cluster for shell tests: 8 fake DGX nodes, a TrainingTopology, its Job, its pods."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from fabricfit.api.constants import JOB_COMPLETION_INDEX_LABEL, SCHEDULING_GATE, TOPOLOGY_LABEL
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.kube.rest import path_for
from fabricfit.placement.request import request_from_spec
from fabricfit.reconcile.context import (
    KueueViews,
    OperatorConfig,
    OperatorState,
    Target,
    Views,
)
from fabricfit.reconcile.inventory import Holding, holding_of, slim_node, slim_pod
from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.memapi import FakeApi

NS, NAME = "team", "llama"
KEY = (NS, NAME)
TT_PATH = path_for("fabricfit.dev/v1alpha1", "trainingtopologies", NS, NAME)
JOB_PATH = path_for("batch/v1", "jobs", NS, NAME)


def pod_path(name: str) -> str:
    return path_for("v1", "pods", NS, name)


def nodes() -> list[dict[str, Any]]:
    fabric = fakenodes.FakeFabric(prefix="n", rail_groups_per_spine=2, nodes_per_rail_group=4)
    return [slim_node(fakenodes.as_ready(m)) for m in fakenodes.node_manifests(fabric)]


def topology(mode: str = "pinned", pods: int = 2, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "fabricfit.dev/v1alpha1",
        "kind": "TrainingTopology",
        "metadata": {"namespace": NS, "name": NAME, "generation": 1, "uid": "u1"},
        "spec": {
            "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": NAME},
            "gpusPerPod": 8,
            "parallelism": {"tensor": 8, "data": pods},
            "placement": {"mode": mode},
            **spec,
        },
    }


def job(completions: int = 2, suspend: bool = True) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"namespace": NS, "name": NAME},
        "spec": {
            "completionMode": "Indexed",
            "completions": completions,
            "parallelism": completions,
            "suspend": suspend,
            "template": {"spec": {"containers": [{"name": "t", "image": "t"}]}},
        },
    }


def gated_pod(index: int) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": NS,
            "name": f"{NAME}-{index}",
            "uid": f"p{index}",
            "resourceVersion": "1",
            "labels": {TOPOLOGY_LABEL: NAME, JOB_COMPLETION_INDEX_LABEL: str(index)},
        },
        "spec": {
            "schedulingGates": [{"name": SCHEDULING_GATE}],
            "containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        },
        "status": {"phase": "Pending"},
    }


class World:
    """The API server, kopf's indexes as the handlers would see them, and operator state."""

    def __init__(self, tt: dict[str, Any], *workloads: tuple[str, dict[str, Any]]) -> None:
        self.api = FakeApi((TT_PATH, tt), *workloads)
        self.nodes = nodes()
        self.pods: list[dict[str, Any]] = []
        self.state = OperatorState(config=OperatorConfig(), rest=self.api)  # type: ignore[arg-type]
        self.kueue = KueueViews()  # what the Kueue indexes hold (tests of admission-check)
        self.others: dict[tuple[str, str], Holding] = {}  # other TrainingTopologies' holdings

    def add_pod(self, pod: dict[str, Any]) -> dict[str, Any]:
        """Create the pod; returns it as the API server stored it (the watch sees that)."""
        path = pod_path(pod["metadata"]["name"])
        self.api.put(path, pod)
        pod.clear()
        pod.update(copy.deepcopy(self.api.objects[path]))
        self.pods.append(pod)
        return pod

    def views(self) -> Views:
        pods = [slim_pod(p) for p in self.pods]
        tt = self.api.objects.get(TT_PATH)  # None once deleted
        return Views(
            nodes=copy.deepcopy(self.nodes),
            pods=[p for p in pods if p is not None],
            topologies={**self.others, KEY: holding_of(tt)}
            if tt is not None
            else dict(self.others),
            kueue=self.kueue,
        )

    def body(self) -> dict[str, Any]:
        """The TrainingTopology as the watch delivers it now."""
        return copy.deepcopy(self.api.objects[TT_PATH])

    def status(self) -> dict[str, Any]:
        return dict(self.api.objects[TT_PATH].get("status") or {})

    def condition(self, type_: str) -> tuple[str, str] | None:
        for c in self.status().get("conditions") or []:
            if c["type"] == type_:
                return c["status"], c["reason"]
        return None


def target_of(
    spec: TrainingTopologySpec,
    workload: Mapping[str, Any] | None,
    template: Mapping[str, Any] | None,
    pods: tuple[Mapping[str, Any], ...],
) -> Target:
    """A reconcile target as the reconcile builds it (the request from spec and template)."""
    return Target(spec, workload, template, pods, request_from_spec(spec, template))
