"""Pinning a gated pod to its planned node: JSON Patches (RFC 6902) built from the pod (pure).

Theory of operation
-------------------
In ``pinned`` mode every pod is created with the scheduling gate ``fabricfit.dev/placement``.
While a pod is gated, Kubernetes lets its required node affinity be *narrowed* (never
widened) and its gates be removed. Pinning is one JSON Patch, applied atomically by the API
server, that

1. adds ``matchFields: metadata.name In [node]`` to **every** required node-selector term
   (terms are ORed, so narrowing each keeps the user's constraints and admits only ``node``),
   or creates the required affinity when the pod has none, creating parent objects only where
   they are absent; and
2. removes our gate by its index, preceded by a ``test`` of that index's name, so a gate list
   changed since the pod was read makes the whole patch fail instead of removing someone
   else's gate. When the pod as read carries a ``resourceVersion``, affinity edits are also
   guarded by a ``test`` of it: ``add`` on a member that appeared meanwhile would replace it.

The real kube-scheduler then binds the pod, and can only pick ``node``. ``metadata.name``
(a field selector) is used instead of the ``kubernetes.io/hostname`` label because node name
and hostname label may differ. Patches are derived from the pod as read; an already pinned
pod yields no affinity operations, an ungated pod no gate operations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from fabricfit.api.constants import SCHEDULING_GATE

NODE_NAME_FIELD: Final = "metadata.name"
#: The ``PodScheduled`` reason kube-scheduler gives a pod no node can take.
UNSCHEDULABLE: Final = "Unschedulable"
_REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_AFFINITY_PATH: Final = ("spec", "affinity", "nodeAffinity", _REQUIRED, "nodeSelectorTerms")


def node_requirement(node: str) -> dict[str, Any]:
    """The node-selector requirement that admits exactly ``node``."""
    return {"key": NODE_NAME_FIELD, "operator": "In", "values": [node]}


def build_pin_patch(
    pod: Mapping[str, Any],
    node: str,
    labels: Mapping[str, str] | None = None,
    *,
    ungate: bool = True,
) -> list[dict[str, Any]]:
    """JSON Patch that pins ``pod`` to ``node`` and removes our gate (see the module doc);
    ``labels`` are set in the same patch (a Deployment pod's index, ``workloads.deployment``),
    guarded like the affinity by the resourceVersion read; ``ungate=False`` pins only
    (device-exact placement lifts the gate once the pod's claim is allocated).

    Raises ValueError when the pod is already pinned to another node: affinity can only be
    narrowed, so such a pod must be recreated, not re-pinned.
    """
    current = planned_node_of(pod)
    if current is not None and current != node:
        raise ValueError(f"pod is already pinned to node {current!r}, not {node!r}")
    affinity_ops = [] if current == node else _affinity_ops(pod, node)
    changes = [*_label_ops(pod, labels or {}), *affinity_ops]
    if not ungate and not changes:
        return []
    tests, removal = (_gate_test(pod), _gate_remove(pod)) if ungate else ([], [])
    return [*_version_test(pod, changes), *tests, *changes, *removal]


def _label_ops(pod: Mapping[str, Any], labels: Mapping[str, str]) -> list[dict[str, Any]]:
    if not labels:
        return []
    if not isinstance(_get(pod, ("metadata", "labels")), Mapping):
        return [{"op": "add", "path": "/metadata/labels", "value": dict(labels)}]
    return [
        {"op": "add", "path": _pointer(("metadata", "labels", key)), "value": value}
        for key, value in sorted(labels.items())
    ]


def build_ungate_patch(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """JSON Patch removing only our gate (guarded by a test); [] when the pod has none."""
    return [*_gate_test(pod), *_gate_remove(pod)]


def is_gated(pod: Mapping[str, Any]) -> bool:
    """Whether the pod still carries fabricfit's scheduling gate."""
    return _gate_index(pod) is not None


def is_unschedulable(pod: Mapping[str, Any]) -> bool:
    """Whether kube-scheduler reports the pod ``Unschedulable`` (condition ``PodScheduled``
    False with that reason) and it is still unbound."""
    if _get(pod, ("spec", "nodeName")):
        return False
    conditions = _get(pod, ("status", "conditions"))
    return isinstance(conditions, list) and any(
        isinstance(c, Mapping)
        and c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == UNSCHEDULABLE
        for c in conditions
    )


def stuck_on(pod: Mapping[str, Any]) -> str | None:
    """The node a pinned pod waits for in vain: ungated, pinned there, unbound, not being
    deleted, and reported ``Unschedulable``; None for any other pod. Such a pod cannot be
    re-pinned (a pod's node affinity can only be narrowed while it is gated), only recreated."""
    if is_gated(pod) or _get(pod, ("metadata", "deletionTimestamp")):
        return None
    return planned_node_of(pod) if is_unschedulable(pod) else None


def planned_node_of(pod: Mapping[str, Any]) -> str | None:
    """The node our requirement pins the pod to: the single ``metadata.name In [node]``
    value that every required term carries; None when absent or inconsistent."""
    terms = _get(pod, _AFFINITY_PATH)
    if not isinstance(terms, list) or not terms:
        return None
    found: set[str] = set()
    for term in terms:
        nodes = _pinned_nodes(term)
        if len(nodes) != 1:
            return None
        found |= nodes
    return found.pop() if len(found) == 1 else None


def _pinned_nodes(term: Any) -> set[str]:
    fields = term.get("matchFields") if isinstance(term, Mapping) else None
    if not isinstance(fields, list):
        return set()
    nodes: set[str] = set()
    for req in fields:
        if _is_node_requirement(req):
            nodes.add(req["values"][0])
    return nodes


def _is_node_requirement(req: Any) -> bool:
    if not isinstance(req, Mapping):
        return False
    values = req.get("values")
    return (
        req.get("key") == NODE_NAME_FIELD
        and req.get("operator") == "In"
        and isinstance(values, list)
        and len(values) == 1
        and isinstance(values[0], str)
    )


def _affinity_ops(pod: Mapping[str, Any], node: str) -> list[dict[str, Any]]:
    requirement = node_requirement(node)
    terms = _get(pod, _AFFINITY_PATH)
    if isinstance(terms, list) and terms:
        return [
            _narrow_term(i, term, requirement)
            for i, term in enumerate(terms)
            if node not in _pinned_nodes(term)
        ]
    # Create the structure below the deepest object that exists.
    value: Any = [{"matchFields": [requirement]}]
    depth = len(_AFFINITY_PATH)
    while depth > 1 and not isinstance(_get(pod, _AFFINITY_PATH[: depth - 1]), Mapping):
        depth -= 1
        value = {_AFFINITY_PATH[depth]: value}
    return [{"op": "add", "path": _pointer(_AFFINITY_PATH[:depth]), "value": value}]


def _narrow_term(index: int, term: Any, requirement: dict[str, Any]) -> dict[str, Any]:
    base = (*_AFFINITY_PATH, str(index))
    fields = term.get("matchFields") if isinstance(term, Mapping) else None
    if isinstance(fields, list):
        return {"op": "add", "path": _pointer((*base, "matchFields", "-")), "value": requirement}
    return {"op": "add", "path": _pointer((*base, "matchFields")), "value": [requirement]}


def _version_test(pod: Mapping[str, Any], affinity_ops: list[Any]) -> list[dict[str, Any]]:
    """Guard affinity edits with the resourceVersion read: ``add`` replaces a member that
    appeared meanwhile, which must not silently drop someone else's affinity."""
    version = _get(pod, ("metadata", "resourceVersion"))
    if not affinity_ops or not isinstance(version, str) or not version:
        return []
    return [{"op": "test", "path": "/metadata/resourceVersion", "value": version}]


def _gate_index(pod: Mapping[str, Any]) -> int | None:
    gates = _get(pod, ("spec", "schedulingGates"))
    if not isinstance(gates, list):
        return None
    return next(
        (
            i
            for i, g in enumerate(gates)
            if isinstance(g, Mapping) and g.get("name") == SCHEDULING_GATE
        ),
        None,
    )


def _gate_test(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    index = _gate_index(pod)
    if index is None:
        return []
    path = _pointer(("spec", "schedulingGates", str(index), "name"))
    return [{"op": "test", "path": path, "value": SCHEDULING_GATE}]


def _gate_remove(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    index = _gate_index(pod)
    if index is None:
        return []
    return [{"op": "remove", "path": _pointer(("spec", "schedulingGates", str(index)))}]


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(obj, Mapping) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _pointer(parts: tuple[str, ...]) -> str:
    """An RFC 6901 JSON Pointer."""
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)
