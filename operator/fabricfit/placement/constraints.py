"""Hard constraints on nodes: availability, free GPUs, nodeSelector, node affinity, taints.

Theory of operation
-------------------
A node is eligible for a request when it is available in the snapshot (Ready, not cordoned), its
GPUs come the way the pods ask for them (DRA ResourceSlices for pods that claim GPUs,
``nvidia.com/gpu`` allocatable for pods that request it), has room for at least one pod after
GPUs already taken and GPUs reserved by other plans, carries every ``nodeSelector`` label,
satisfies at least one required nodeSelectorTerm (Kubernetes
semantics: terms ORed, expressions ANDed; ``Gt``/``Lt`` compare integers), and every
NoSchedule/NoExecute taint is tolerated. ``node_rejection`` returns the first failed rule as a
short phrase so infeasibility reports can say *why* nodes were excluded, counted per phrase.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from fabricfit.api.constants import GPU_RESOURCE
from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo, Taint
from fabricfit.placement.request import (
    DEVICE_PLUGIN,
    DRA,
    MatchExpression,
    PlacementRequest,
    SelectorTerm,
    Toleration,
)

HARD_TAINT_EFFECTS = ("NoSchedule", "NoExecute")
#: No GPUs held by other plans (the default of every ``reservations`` parameter).
NO_RESERVATIONS: Mapping[str, int] = MappingProxyType({})


def free_after_reservations(node: NodeInfo, reservations: Mapping[str, int]) -> int:
    """Free GPUs on ``node`` once other plans' reservations are taken out (never negative)."""
    return max(0, min(node.free_gpus, node.gpus) - reservations.get(node.name, 0))


def node_rejection(
    node: NodeInfo,
    request: PlacementRequest,
    reservations: Mapping[str, int],
    *,
    capacity: bool = True,
) -> str | None:
    """Why ``node`` cannot host a pod of ``request`` (None: it can); ``capacity=False`` leaves
    out its free GPUs (whether it could ever host one: what the lower bound may assume)."""
    if not node.available:
        return (
            f"unavailable ({node.unavailable_reason})" if node.unavailable_reason else "unavailable"
        )
    if request.gpu_source == DRA and not node.dra:
        return "no GPUs in DRA ResourceSlices (the pods claim their GPUs)"
    if request.gpu_source == DEVICE_PLUGIN and node.dra:
        return f"no {GPU_RESOURCE} allocatable (its GPUs are DRA devices)"
    if capacity and free_after_reservations(node, reservations) < request.gpus_per_pod:
        return f"fewer than {request.gpus_per_pod} free GPUs"
    for key, value in request.node_selector.items():
        if node.labels.get(key) != value:
            return f"nodeSelector {key}={value} not matched"
    if request.affinity and not any(_term_matches(node, t) for t in request.affinity):
        return "required node affinity not matched"
    for taint in node.taints:
        if taint.effect in HARD_TAINT_EFFECTS and not tolerates(request.tolerations, taint):
            return f"untolerated taint {taint.key}:{taint.effect}"
    return None


def usable_nodes(nodes: Iterable[NodeInfo], request: PlacementRequest) -> list[NodeInfo]:
    """The nodes a pod of ``request`` may ever run on (its selectors, affinity, tolerations and
    GPU source; busy or not): what the job's fabric and lower bound are read from."""
    return [n for n in nodes if node_rejection(n, request, NO_RESERVATIONS, capacity=False) is None]


def constraints_key(request: PlacementRequest) -> tuple[object, ...]:
    """What :func:`usable_nodes` reads of a request, hashable (a cache key)."""
    selector = tuple(sorted(request.node_selector.items()))
    return (selector, request.affinity, request.tolerations, request.gpu_source)


def inputs_digest(request: PlacementRequest) -> str:
    """A short digest of :func:`constraints_key`, stable across processes: recorded with a plan,
    so a plan made on other constraints (before its workload existed) is made again."""
    return hashlib.sha256(repr(constraints_key(request)).encode()).hexdigest()[:16]


def eligible_nodes(
    snapshot: ClusterSnapshot, request: PlacementRequest, reservations: Mapping[str, int]
) -> tuple[tuple[NodeInfo, ...], Counter[str]]:
    """Nodes that can host at least one pod, and a count of rejection phrases for the rest."""
    chosen: list[NodeInfo] = []
    rejected: Counter[str] = Counter()
    for node in snapshot.nodes:
        reason = node_rejection(node, request, reservations)
        if reason is None:
            chosen.append(node)
        else:
            rejected[reason] += 1
    return tuple(chosen), rejected


def _term_matches(node: NodeInfo, term: SelectorTerm) -> bool:
    if not term.expressions and not term.fields:
        return False  # an empty term matches nothing (Kubernetes semantics)
    field_values = {"metadata.name": node.name}
    return all(_expression_matches(node.labels, e) for e in term.expressions) and all(
        _expression_matches(field_values, e) for e in term.fields
    )


def _expression_matches(labels: Mapping[str, str], expression: MatchExpression) -> bool:
    value = labels.get(expression.key)
    op = expression.operator
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op == "In":
        return value is not None and value in expression.values
    if op == "NotIn":
        return value is None or value not in expression.values
    return _compare_integer(value, expression.values, greater=op == "Gt")


def _compare_integer(value: str | None, values: Iterable[str], *, greater: bool) -> bool:
    bounds = list(values)
    if value is None or len(bounds) != 1:
        return False
    try:
        left, right = int(value), int(bounds[0])
    except ValueError:
        return False
    return left > right if greater else left < right


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Whether any toleration matches ``taint`` (Kubernetes toleration semantics)."""
    for tol in tolerations:
        if tol.effect and tol.effect != taint.effect:
            continue
        if tol.operator == "Exists" and (not tol.key or tol.key == taint.key):
            return True
        if tol.operator == "Equal" and tol.key == taint.key and tol.value == taint.value:
            return True
    return False
