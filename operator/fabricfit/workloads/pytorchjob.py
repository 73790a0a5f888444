"""PyTorchJob (``kubeflow.org``): ``spec.pytorchReplicaSpecs.{Master,Worker}.template``.

Pod k is the ``RANK`` the Kubeflow training operator gives the pod: the replica index for the
Master, index + Master replicas (1) for Worker *i* (``pkg/controller.v1/pytorch/envvar.go`` in
kubeflow/training-operator); the replica-type label value is lower case there and compared
case-insensitively here. The suspend flag is ``spec.runPolicy.suspend``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from fabricfit.api.constants import KUBEFLOW_REPLICA_INDEX_LABEL, KUBEFLOW_REPLICA_TYPE_LABEL
from fabricfit.workloads.base import Path, WorkloadKind, count, get_path, parse_index

REPLICA_TYPES: Final = ("Master", "Worker")


class PyTorchJob(WorkloadKind):
    name: ClassVar[str] = "PyTorchJob"
    api_version: ClassVar[str] = "kubeflow.org/v1"
    plural: ClassVar[str] = "pytorchjobs"
    index_label: ClassVar[str | None] = KUBEFLOW_REPLICA_INDEX_LABEL
    suspend_path: ClassVar[Path | None] = ("spec", "runPolicy", "suspend")
    allows_pod_affinity: ClassVar[bool] = True
    # github.com/kubeflow/training-operator@v1.9.3 pkg/apis/kubeflow.org/v1/common_types.go:151,159
    finished_conditions: ClassVar[frozenset[str]] = frozenset({"Succeeded", "Failed"})

    def template_paths(self, workload: Mapping[str, Any]) -> list[Path]:
        return [("spec", "pytorchReplicaSpecs", t, "template") for t in REPLICA_TYPES]

    def expected_pods(self, workload: Mapping[str, Any]) -> int | None:
        if not isinstance(get_path(workload, ("spec",)), Mapping):
            return None
        found = [replicas(workload, t) for t in REPLICA_TYPES]
        return sum(r for r in found if r is not None) or None

    def template_pod_count(self, workload: Mapping[str, Any], path: Path) -> int | None:
        return replicas(workload, str(path[2])) if len(path) > 2 else None

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        replica_type = labels.get(KUBEFLOW_REPLICA_TYPE_LABEL)
        index = parse_index(labels.get(KUBEFLOW_REPLICA_INDEX_LABEL))
        if not isinstance(replica_type, str) or index is None:
            return None
        masters = 1 if workload is None else (replicas(workload, "Master") or 0)
        if replica_type.lower() == "master":
            return index if index < masters else None
        if replica_type.lower() == "worker":
            return index + masters
        return None


def replicas(workload: Mapping[str, Any], replica_type: str) -> int | None:
    spec = get_path(workload, ("spec", "pytorchReplicaSpecs", replica_type))
    return count(spec.get("replicas"), 1) if isinstance(spec, Mapping) else None


KIND = PYTORCHJOB = PyTorchJob()
