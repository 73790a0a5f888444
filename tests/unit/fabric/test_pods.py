"""GPU accounting follows Kubernetes' effective-request rules and ignores terminated pods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fabricfit.fabric.pods import gpus_in_use, pod_gpu_request
from fabricfit.fabric.topology import Diagnostic

PodFactory = Callable[..., dict[str, Any]]  # the `pod` fixture of conftest.py


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"gpus": "4"}, 4),
        ({"limits": "2"}, 2),  # extended resources: request defaults to limit
        ({"gpus": "3", "limits": "3"}, 3),
        ({}, 0),
        ({"gpus": "2", "init": (("6", None),)}, 6),  # init runs alone: max(init, containers)
        ({"gpus": "6", "init": (("2", None),)}, 6),
        ({"gpus": "2", "init": (("1", "Always"),)}, 3),  # a sidecar adds to the containers
        ({"gpus": "1", "init": (("2", "Always"), ("4", None))}, 6),  # init after sidecar: 2 + 4
        ({"gpus": "1", "init": (("4", None), ("2", "Always"))}, 4),  # init before sidecar: 4
        ({"gpus": "garbage"}, 0),
    ],
)
def test_effective_request(pod: PodFactory, kwargs: dict[str, Any], expected: int) -> None:
    assert pod_gpu_request(pod("n1", **kwargs), []) == expected


def test_containers_add_up(pod: PodFactory) -> None:
    containers = [
        {"name": "a", "resources": {"requests": {"nvidia.com/gpu": "2"}}},
        {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "3"}}},
        {"name": "c"},
        "not-a-container",
    ]
    assert pod_gpu_request(pod("n1", containers=containers), []) == 5


def test_overhead_is_added(pod: PodFactory) -> None:
    p = pod("n1", "2")
    p["spec"]["overhead"] = {"nvidia.com/gpu": "1"}
    assert pod_gpu_request(p, []) == 3


def test_in_use_skips_terminal_and_unbound_pods(pod: PodFactory) -> None:
    pods = [
        pod("n1", "4", name="running"),
        pod("n1", "2", name="pending-bound", phase="Pending"),
        pod("n1", "8", name="done", phase="Succeeded"),
        pod("n1", "8", name="crashed", phase="Failed"),
        pod(None, "8", name="unscheduled", phase="Pending"),
        pod("n2", "1", name="other-node"),
        {"spec": "garbage"},
        None,
    ]
    diagnostics: list[Diagnostic] = []
    assert gpus_in_use(pods, diagnostics) == {"n1": 6, "n2": 1}
    assert diagnostics == []


def test_bad_quantities_are_reported_against_the_node(pod: PodFactory) -> None:
    diagnostics: list[Diagnostic] = []
    assert gpus_in_use([pod("n1", "-2", name="neg")], diagnostics) == {}
    assert [d.node for d in diagnostics] == ["n1"]
    assert "pod ns/neg" in diagnostics[0].message and "negative" in diagnostics[0].message


def test_pods_that_are_not_a_list_are_reported() -> None:
    diagnostics: list[Diagnostic] = []
    assert gpus_in_use("pods", diagnostics) == {}
    assert len(diagnostics) == 1
