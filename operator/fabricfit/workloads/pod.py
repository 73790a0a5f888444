"""Plain Pods (``kind: Pod``): the workload is the set of pods ``workloadRef.podSelector``
matches, read as a ``PodGroup`` (``items``); pod k carries k in the TrainingTopology's
``indexLabel``. There is no template to rewrite: the pods must be created with fabricfit's
scheduling gate, and the operator labels them as its own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from fabricfit.workloads.base import WorkloadKind, parse_index


class Pod(WorkloadKind):
    name: ClassVar[str] = "Pod"
    api_version: ClassVar[str] = "v1"
    plural: ClassVar[str] = "pods"
    # Lists the pods the selector matches; labels them (the pod watch needs list, watch, patch).
    rbac_verbs: ClassVar[tuple[str, ...]] = ("list", "patch")
    index_without_workload: ClassVar[bool] = True
    selects_pods: ClassVar[bool] = True

    def rank_template(self, workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The first pod stands in for the template (all pods of the group are alike)."""
        items = workload.get("items") or []
        return items[0] if items else None

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        return parse_index(labels.get(index_label)) if index_label else None


KIND = POD = Pod()


def pod_group(pods: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The workload of a ``kind: Pod`` ref: the pods its selector matched, or None when none did."""
    return {"apiVersion": "v1", "kind": "PodGroup", "items": list(pods)} if pods else None
