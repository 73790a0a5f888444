"""Pod-template rendering: the gate, labels, Kueue annotations and rail-group affinity (pure).

Theory of operation
-------------------
The operator never builds a pod template of its own: it takes the user's template, returns a
new one with fabricfit's additions, and writes that back at the kind-specific path
(:mod:`fabricfit.workloads`). Everything here is a function of its inputs, and every
addition is *set-like* (a label value, a gate by name, an affinity term recognised by its
selector), so rendering an already-rendered template changes nothing: a reconcile that runs
twice, or after an operator restart, writes the same bytes.

What each mode adds (``advisory`` changes nothing):

* every other mode: label ``fabricfit.dev/topology=<name>`` (how the operator's pod watch and
  the affinity below find the job's pods), ``kueue.x-k8s.io/queue-name`` when a queue is named,
  and a *preferred* pod affinity (weight 100) to pods of the same topology across
  ``rail_group_key``, so that pods the scheduler places itself gather in one rail group;
* ``pinned`` and ``admission-check``: the scheduling gate ``fabricfit.dev/placement``, removed
  per pod once the pod is pinned to its planned node (:mod:`fabricfit.render.pods`);
* ``kueue-tas``: the given Kueue pod-set annotations; Kueue TAS keys that fabricfit manages and
  the caller did not pass are dropped, because Kueue rejects a template that carries both a
  required and a preferred topology. Our gate is dropped too (Kueue places these pods).

The API server only lets a *suspended, never started* Job (and the JobSet webhook a suspended
JobSet) change template labels, annotations, node selector/affinity, tolerations and gates:
pod affinity is immutable there. Callers therefore pass ``rail_group_key=None`` for those
kinds (:func:`fabricfit.workloads.allows_pod_affinity`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from fabricfit.api.constants import (
    KUEUE_PODSET_GROUP,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_QUEUE_LABEL,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_CONSTRAINTS,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    SCHEDULING_GATE,
    TOPOLOGY_LABEL,
)

Mode = Literal["pinned", "admission-check", "kueue-tas", "advisory"]
#: Modes in which fabricfit pins each pod to its planned node itself.
PINNING_MODES: Final = frozenset({"pinned", "admission-check"})

RAIL_GROUP_AFFINITY_WEIGHT: Final = 100
#: Kueue pod-set annotations fabricfit writes in ``kueue-tas`` mode (and so may remove).
MANAGED_KUEUE_ANNOTATIONS: Final = (
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    KUEUE_SLICE_CONSTRAINTS,
    KUEUE_PODSET_GROUP,
)


def thaw(value: Any) -> Any:
    """A deep, mutable copy of a JSON-like value (Mappings become dicts, tuples lists)."""
    if isinstance(value, Mapping):
        return {str(k): thaw(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [thaw(v) for v in value]
    return value


def merge_diff(old: Any, new: Any) -> Any:
    """The JSON merge patch (RFC 7386) taking ``old`` to ``new``; {} when equal."""
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return thaw(new)
    diff: dict[str, Any] = {k: None for k in old if k not in new}
    for key, value in new.items():
        if key not in old:
            diff[key] = thaw(value)
        elif isinstance(value, Mapping) and isinstance(old[key], Mapping):
            nested = merge_diff(old[key], value)
            if nested:
                diff[key] = nested
        elif old[key] != value:
            diff[key] = thaw(value)
    return diff


def build_template_patch(
    *,
    topology_name: str,
    mode: Mode,
    queue_name: str | None,
    rail_group_key: str | None,
    kueue_annotations: Mapping[str, str],
    template: Mapping[str, Any],
) -> dict[str, Any]:
    """The new pod template: ``template`` plus fabricfit's additions for ``mode``.

    A full replacement (not a patch): every field of ``template`` is kept except the
    fabricfit-managed keys this mode rewrites. ``advisory`` returns an unchanged copy.
    """
    new: dict[str, Any] = thaw(template)
    if mode == "advisory":
        return new
    metadata = _child(new, "metadata")
    labels = _child(metadata, "labels")
    labels[TOPOLOGY_LABEL] = topology_name
    if queue_name:
        labels[KUEUE_QUEUE_LABEL] = queue_name
    spec = _child(new, "spec")
    if mode == "kueue-tas":
        _set_kueue_annotations(metadata, kueue_annotations)
        _drop_gate(spec)
    else:
        _add_gate(spec)
    if rail_group_key:
        _set_rail_group_affinity(spec, topology_name, rail_group_key)
    return new


def build_released_template(template: Mapping[str, Any]) -> dict[str, Any]:
    """``template`` without fabricfit's scheduling gate: what a workload keeps once its
    TrainingTopology is deleted. Labels, annotations and the preferred rail-group affinity
    stay: none of them keeps a pod from being scheduled."""
    new: dict[str, Any] = thaw(template)
    spec = new.get("spec")
    if isinstance(spec, dict):
        _drop_gate(spec)
    return new


def build_workload_labels(queue_name: str | None) -> dict[str, str]:
    """Labels for the workload object's own metadata (Kueue reads the queue name there)."""
    return {KUEUE_QUEUE_LABEL: queue_name} if queue_name else {}


def rail_group_affinity_term(topology_name: str, rail_group_key: str) -> dict[str, Any]:
    """The preferred pod-affinity term keeping a topology's pods in one rail group."""
    return {
        "weight": RAIL_GROUP_AFFINITY_WEIGHT,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": {TOPOLOGY_LABEL: topology_name}},
            "topologyKey": rail_group_key,
        },
    }


def _child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]`` as a dict, created when absent or null."""
    value = parent.get(key)
    if not isinstance(value, dict):
        value = {}
        parent[key] = value
    return value


def _set_kueue_annotations(metadata: dict[str, Any], wanted: Mapping[str, str]) -> None:
    existing = metadata.get("annotations")
    annotations = existing if isinstance(existing, dict) else {}
    for key in MANAGED_KUEUE_ANNOTATIONS:
        if key not in wanted:
            annotations.pop(key, None)
    annotations.update({k: str(v) for k, v in wanted.items()})
    if annotations or isinstance(existing, dict):
        metadata["annotations"] = annotations


def _gates(spec: dict[str, Any]) -> list[Any]:
    gates = spec.get("schedulingGates")
    return gates if isinstance(gates, list) else []


def _is_ours(gate: Any) -> bool:
    return isinstance(gate, Mapping) and gate.get("name") == SCHEDULING_GATE


def _add_gate(spec: dict[str, Any]) -> None:
    """Exactly one gate of ours, at its first position (duplicates are invalid in a pod)."""
    gates = _gates(spec)
    ours = [i for i, g in enumerate(gates) if _is_ours(g)]
    if not ours:
        spec["schedulingGates"] = [*gates, {"name": SCHEDULING_GATE}]
    elif len(ours) > 1:
        spec["schedulingGates"] = [
            g for i, g in enumerate(gates) if i in ours[:1] or not _is_ours(g)
        ]


def _drop_gate(spec: dict[str, Any]) -> None:
    gates = _gates(spec)
    if not any(_is_ours(g) for g in gates):
        return
    kept = [g for g in gates if not _is_ours(g)]
    if kept:
        spec["schedulingGates"] = kept
    else:
        del spec["schedulingGates"]


def _is_rail_group_term(term: Any) -> bool:
    """A term fabricfit wrote: its selector matches exactly the topology label."""
    if not isinstance(term, Mapping):
        return False
    pod_term = term.get("podAffinityTerm")
    selector = pod_term.get("labelSelector") if isinstance(pod_term, Mapping) else None
    if not isinstance(selector, Mapping) or set(selector) != {"matchLabels"}:
        return False
    match = selector["matchLabels"]
    return isinstance(match, Mapping) and set(match) == {TOPOLOGY_LABEL}


def _set_rail_group_affinity(spec: dict[str, Any], topology_name: str, key: str) -> None:
    pod_affinity = _child(_child(spec, "affinity"), "podAffinity")
    field = "preferredDuringSchedulingIgnoredDuringExecution"
    terms = pod_affinity.get(field)
    others = [t for t in terms if not _is_rail_group_term(t)] if isinstance(terms, list) else []
    pod_affinity[field] = [*others, rail_group_affinity_term(topology_name, key)]
