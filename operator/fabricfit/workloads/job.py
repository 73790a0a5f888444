"""Job (``batch/v1``): one template, ``spec.template``; Indexed Jobs number pods by their
completion index, so pod *k* is the pod with completion index *k*."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from fabricfit.api.constants import JOB_COMPLETION_INDEX_LABEL
from fabricfit.workloads.base import Path, WorkloadKind, count, get_path, parse_index


class Job(WorkloadKind):
    name: ClassVar[str] = "Job"
    api_version: ClassVar[str] = "batch/v1"
    plural: ClassVar[str] = "jobs"
    index_label: ClassVar[str | None] = JOB_COMPLETION_INDEX_LABEL
    suspend_path: ClassVar[Path | None] = ("spec", "suspend")
    index_without_workload: ClassVar[bool] = True
    # k8s.io/api (Kubernetes v1.36) batch/v1 types.go: JobComplete "Complete", JobFailed "Failed"
    finished_conditions: ClassVar[frozenset[str]] = frozenset({"Complete", "Failed"})

    def template_paths(self, workload: Mapping[str, Any]) -> list[Path]:
        return [("spec", "template")]

    def expected_pods(self, workload: Mapping[str, Any]) -> int | None:
        spec = get_path(workload, ("spec",))
        if not isinstance(spec, Mapping) or spec.get("completionMode") != "Indexed":
            return None
        return count(spec.get("completions"), None)

    def template_pod_count(self, workload: Mapping[str, Any], path: Path) -> int | None:
        return self.expected_pods(workload)

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        return parse_index(labels.get(JOB_COMPLETION_INDEX_LABEL))


KIND = JOB = Job()
