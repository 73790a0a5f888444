"""Deployment (``apps/v1``): one template, ``spec.template``; its pods have no index of their
own, so fabricfit gives each one the plan's indices in the order the pods appear.

Theory of operation
-------------------
A Deployment's pods are interchangeable (a served model's single-node replicas), and none
carries a stable index: a pod replaced by the ReplicaSet is a new pod with a new name. When
fabricfit pins a gated pod that has no ``fabricfit.dev/pod-index`` label yet, it gives it the
lowest plan index no live pod of the Deployment holds (:func:`assign_indices`: pods by
creation time, then name) and writes the label in the same JSON Patch that pins the pod and
lifts its gate; from then on the label is the pod's index, as a Job's completion index is.
A pod being deleted (``deletionTimestamp``) or finished gives its index up, so a rolling
update moves each new pod into the place of one the ReplicaSet scales down (strategy
``Recreate``, or ``maxUnavailable`` ≥ 1; a surge pod waits, gated, for an index to free).
The choice depends only on the pods' creation order and the labels they show, so a watch
that lags the patch that wrote a label gives the same answer again.

There is no suspend flag: in pinned mode the template carries the gate from the start. Kueue
admits each pod of a Deployment as a Workload of its own
(``sigs.k8s.io/kueue@v0.19.2/pkg/controller/jobs/deployment``), so a Kueue PodSet holds one
pod. A template change rolls the pods, so fabricfit adds no rail-group affinity to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from fabricfit.api.constants import POD_INDEX_LABEL
from fabricfit.render.pods import is_gated
from fabricfit.workloads.base import Path, WorkloadKind, count, get_path, parse_index


class Deployment(WorkloadKind):
    name: ClassVar[str] = "Deployment"
    api_version: ClassVar[str] = "apps/v1"
    plural: ClassVar[str] = "deployments"
    admitted_as_workload: ClassVar[bool] = False
    index_label: ClassVar[str | None] = POD_INDEX_LABEL
    assigns_index: ClassVar[bool] = True

    def template_paths(self, workload: Mapping[str, Any]) -> list[Path]:
        return [("spec", "template")]

    def expected_pods(self, workload: Mapping[str, Any]) -> int | None:
        return count(get_path(workload, ("spec", "replicas")), 1)

    def template_pod_count(self, workload: Mapping[str, Any], path: Path) -> int | None:
        return 1

    def kueue_workloads(self, workload: Mapping[str, Any]) -> int:
        replicas = self.expected_pods(workload)
        return replicas if replicas is not None else 1

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        return parse_index(labels.get(POD_INDEX_LABEL))


def assign_indices(pods: Iterable[Mapping[str, Any]], size: int) -> dict[str, int]:
    """uid → index for every live gated pod without one: the lowest index in ``0..size-1`` no
    live pod's label holds, pods by creation time then name (so the same pods always get the
    same indices). Pods left without a free index are left out."""
    live = [p for p in pods if _live(p)]
    held: dict[str, int] = {}
    for pod in live:
        index = parse_index(_labels(pod).get(POD_INDEX_LABEL))
        if index is not None and 0 <= index < size:
            held[_uid(pod)] = index
    free = sorted(set(range(size)) - set(held.values()), reverse=True)
    waiting = sorted((p for p in live if _uid(p) not in held and is_gated(p)), key=_created)
    return {_uid(pod): free.pop() for pod in waiting if free}


def _live(pod: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    phase = (pod.get("status") or {}).get("phase")
    return not meta.get("deletionTimestamp") and phase not in {"Succeeded", "Failed"}


def _uid(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or meta.get("name") or "")


def _labels(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = (pod.get("metadata") or {}).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def _created(pod: Mapping[str, Any]) -> tuple[str, str]:
    meta = pod.get("metadata") or {}
    return (str(meta.get("creationTimestamp") or ""), str(meta.get("name") or ""))


KIND = DEPLOYMENT = Deployment()
