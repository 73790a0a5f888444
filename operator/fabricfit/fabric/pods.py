"""GPUs already taken on each node, from plain Pod dicts (pure).

Theory of operation
-------------------
A GPU is taken while a pod bound to the node (``spec.nodeName``) has not terminated: phases
Succeeded and Failed release it, Pending-but-bound and Running hold it (so does a pod being
deleted, until it is gone). A pod takes what the scheduler accounts for it, Kubernetes'
*effective request*: each container asks its ``requests`` (its ``limits`` when the request is
absent, as Kubernetes defaults extended-resource requests to limits); regular containers and
sidecars (``restartPolicy: Always`` init containers) run together and add up; a classic init
container runs alone next to the sidecars started before it; the pod takes the larger of the
two phases, plus ``spec.overhead``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fabricfit.api.constants import GPU_RESOURCE
from fabricfit.fabric.objects import list_at, mapping_at, str_at
from fabricfit.fabric.quantity import parse_gpu_count
from fabricfit.fabric.topology import Diagnostic

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


#: What one pod takes: (node name, GPUs, its diagnostics); no node when it holds nothing.
Usage = tuple[str | None, int, tuple[Diagnostic, ...]]
NO_USAGE: Usage = (None, 0, ())


def gpus_in_use(pods: Sequence[Any], diagnostics: list[Diagnostic]) -> dict[str, int]:
    """GPUs held per node name by non-terminal bound pods; problems go to ``diagnostics``."""
    used: dict[str, int] = {}
    if not isinstance(pods, Sequence) or isinstance(pods, str | bytes):
        message = "pods is not a list; ignored"
        diagnostics.append(Diagnostic(node="", message=message, severity="error"))
        return used
    for pod in pods:
        node, gpus, problems = pod_usage(pod)
        diagnostics.extend(problems)
        if node is not None and gpus:
            used[node] = used.get(node, 0) + gpus
    return used


def pod_usage(pod: object) -> Usage:
    """The node a non-terminal bound pod holds GPUs on, how many, and what was wrong."""
    node = str_at(pod, "spec", "nodeName")
    if not node or str_at(pod, "status", "phase") in TERMINAL_PHASES:
        return NO_USAGE
    problems: list[str] = []
    gpus = pod_gpu_request(pod, problems)
    found = tuple(Diagnostic(node=node, message=f"pod {_pod_id(pod)}: {p}") for p in problems)
    return node, gpus, found


def pod_gpu_request(pod: object, problems: list[str]) -> int:
    """The pod's effective GPU request (see the module docstring)."""
    containers = sum(_container_gpus(c, problems) for c in list_at(pod, "spec", "containers"))
    sidecars = 0
    init_peak = 0
    for init in list_at(pod, "spec", "initContainers"):
        gpus = _container_gpus(init, problems)
        if str_at(init, "restartPolicy") == "Always":
            sidecars += gpus
            init_peak = max(init_peak, sidecars)
        else:
            init_peak = max(init_peak, sidecars + gpus)
    overhead, problem = parse_gpu_count(mapping_at(pod, "spec", "overhead").get(GPU_RESOURCE))
    if problem:
        problems.append(f"overhead {problem}")
    return max(init_peak, containers + sidecars) + overhead


def _container_gpus(container: object, problems: list[str]) -> int:
    requests = mapping_at(container, "resources", "requests")
    limits = mapping_at(container, "resources", "limits")
    raw = requests.get(GPU_RESOURCE, limits.get(GPU_RESOURCE))
    gpus, problem = parse_gpu_count(raw)
    if problem:
        name = str_at(container, "name") or "?"
        problems.append(f"container {name}: {GPU_RESOURCE} {problem}; counted as 0")
    return gpus


def _pod_id(pod: object) -> str:
    namespace = str_at(pod, "metadata", "namespace") or "default"
    return f"{namespace}/{str_at(pod, 'metadata', 'name') or '?'}"
