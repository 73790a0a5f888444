"""LeaderWorkerSet (``leaderworkerset.x-k8s.io``):
``spec.leaderWorkerTemplate.{leaderTemplate,workerTemplate}``.

Pod k = group index · size + worker index (the leader is worker 0). Kueue makes one Workload
per group (:meth:`LeaderWorkerSet.kueue_workloads`) and admits each on its own, as a leader
PodSet (1 pod) and a worker PodSet (size - 1); without a leader template the worker template
also makes the leader's PodSet. There is no suspend flag.

Kueue's webhook for LeaderWorkerSets forbids any change to the templates' pod specs (images
aside) once the object carries a queue name, so such a workload gets metadata only (labels,
Kueue's topology annotations): no rail-group affinity, no gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from fabricfit.api.constants import (
    KUEUE_QUEUE_LABEL,
    LWS_GROUP_INDEX_LABEL,
    LWS_WORKER_INDEX_LABEL,
)
from fabricfit.workloads.base import Path, WorkloadKind, count, get_path, parse_index

_BASE: Path = ("spec", "leaderWorkerTemplate")


class LeaderWorkerSet(WorkloadKind):
    name: ClassVar[str] = "LeaderWorkerSet"
    api_version: ClassVar[str] = "leaderworkerset.x-k8s.io/v1"
    plural: ClassVar[str] = "leaderworkersets"
    index_label: ClassVar[str | None] = LWS_WORKER_INDEX_LABEL
    allows_pod_affinity: ClassVar[bool] = True

    def template_paths(self, workload: Mapping[str, Any]) -> list[Path]:
        return [(*_BASE, "leaderTemplate"), (*_BASE, "workerTemplate")]

    def expected_pods(self, workload: Mapping[str, Any]) -> int | None:
        spec = get_path(workload, ("spec",))
        if not isinstance(spec, Mapping):
            return None
        size = count(get_path(spec, ("leaderWorkerTemplate", "size")), 1)
        groups = count(spec.get("replicas"), 1)
        return size * groups if size is not None and groups is not None else None

    def template_pod_count(self, workload: Mapping[str, Any], path: Path) -> int | None:
        size = count(get_path(workload, (*_BASE, "size")), 1)
        if path[-1] == "leaderTemplate" or get_path(workload, (*_BASE, "leaderTemplate")) is None:
            return 1
        return size - 1 if size is not None else None

    def group_pods(self, workload: Mapping[str, Any]) -> int | None:
        return count(get_path(workload, (*_BASE, "size")), 1)

    def kueue_workloads(self, workload: Mapping[str, Any]) -> int:
        groups = count(get_path(workload, ("spec", "replicas")), 1)
        return groups if groups is not None else 1

    def pod_spec_frozen(self, workload: Mapping[str, Any]) -> bool:
        meta = get_path(workload, ("metadata",))
        if not isinstance(meta, Mapping):
            return False
        return any(
            isinstance(found, Mapping) and bool(found.get(KUEUE_QUEUE_LABEL))
            for found in (meta.get("labels"), meta.get("annotations"))
        )

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        if workload is None:
            return None
        size = count(get_path(workload, (*_BASE, "size")), 1)
        group = parse_index(labels.get(LWS_GROUP_INDEX_LABEL))
        worker = parse_index(labels.get(LWS_WORKER_INDEX_LABEL))
        if size is None or group is None or worker is None or worker >= size:
            return None
        return group * size + worker


KIND = LEADERWORKERSET = LeaderWorkerSet()
