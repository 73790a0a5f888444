"""StatefulSet (``apps/v1``): one template, ``spec.template``; pod *k* is the pod of ordinal
*k*, read from its ``apps.kubernetes.io/pod-index`` label (Kubernetes ≥ 1.28).

A served model's single-node replicas (one pod each, ``gpusPerPod`` = the replica's GPUs).
There is no suspend flag: in pinned mode the template carries the ``fabricfit.dev/placement``
gate from the start (as a LeaderWorkerSet's does), and with ``podManagementPolicy: Parallel``
all pods appear at once (the default OrderedReady waits for each ordinal to be Ready before
creating the next; fabricfit pins them as they come). Kueue admits a StatefulSet as one pod
group: one Workload, one PodSet of every replica
(``sigs.k8s.io/kueue@v0.19.2/pkg/controller/jobs/statefulset``). A template change rolls the
pods, so fabricfit adds no rail-group affinity to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from fabricfit.api.constants import STATEFULSET_POD_INDEX_LABEL
from fabricfit.workloads.base import Path, WorkloadKind, count, get_path, parse_index


class StatefulSet(WorkloadKind):
    name: ClassVar[str] = "StatefulSet"
    api_version: ClassVar[str] = "apps/v1"
    plural: ClassVar[str] = "statefulsets"
    admitted_as_workload: ClassVar[bool] = False
    index_label: ClassVar[str | None] = STATEFULSET_POD_INDEX_LABEL
    index_without_workload: ClassVar[bool] = True

    def template_paths(self, workload: Mapping[str, Any]) -> list[Path]:
        return [("spec", "template")]

    def expected_pods(self, workload: Mapping[str, Any]) -> int | None:
        return count(get_path(workload, ("spec", "replicas")), 1)

    def template_pod_count(self, workload: Mapping[str, Any], path: Path) -> int | None:
        return self.expected_pods(workload)

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        return parse_index(labels.get(STATEFULSET_POD_INDEX_LABEL))


KIND = STATEFULSET = StatefulSet()
