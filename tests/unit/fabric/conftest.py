"""Builders of minimal Node/Pod dicts shaped like the API server's, shared by fabric tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

NodeFactory = Callable[..., dict[str, Any]]
PodFactory = Callable[..., dict[str, Any]]


def build_node(
    name: str,
    labels: Mapping[str, Any] | None = None,
    *,
    gpus: Any = "8",
    ready: str | None = "True",
    unschedulable: Any = None,
    taints: list[Any] | None = None,
) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    spec: dict[str, Any] = {}
    if unschedulable is not None:
        spec["unschedulable"] = unschedulable
    if taints is not None:
        spec["taints"] = taints
    allocatable = {"cpu": "192", "memory": "2Ti"}
    if gpus is not None:
        allocatable["nvidia.com/gpu"] = gpus
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
        "status": {"allocatable": allocatable, "conditions": conditions},
    }


def build_pod(
    node: str | None,
    gpus: Any = None,
    *,
    name: str = "p",
    phase: str = "Running",
    limits: Any = None,
    init: tuple[tuple[Any, str | None], ...] = (),
    containers: list[Any] | None = None,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if gpus is not None:
        resources["requests"] = {"nvidia.com/gpu": gpus}
    if limits is not None:
        resources["limits"] = {"nvidia.com/gpu": limits}
    spec: dict[str, Any] = {
        "containers": containers
        if containers is not None
        else [{"name": "c", "resources": resources}]
    }
    if node is not None:
        spec["nodeName"] = node
    if init:
        spec["initContainers"] = [
            {"name": f"i{k}", "resources": {"limits": {"nvidia.com/gpu": g}}}
            | ({"restartPolicy": policy} if policy else {})
            for k, (g, policy) in enumerate(init)
        ]
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
        "status": {"phase": phase},
    }


@pytest.fixture
def node() -> NodeFactory:
    return build_node


@pytest.fixture
def pod() -> PodFactory:
    return build_pod
