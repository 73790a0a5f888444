"""JobSet (``jobset.x-k8s.io``): a template per replicated job,
``spec.replicatedJobs[i].template.spec.template``.

Replicated jobs count in spec order, so pod k = (pods of the replicated jobs before it) +
job-index · pods-per-job + completion index, as Kueue's rank ordering numbers them. Kueue
admits one PodSet per replicated job. Patches rewrite the whole ``replicatedJobs`` list (merge
patches replace lists), and the JobSet webhook forbids pod-affinity changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from fabricfit.api.constants import (
    JOB_COMPLETION_INDEX_LABEL,
    JOBSET_JOB_INDEX_LABEL,
    JOBSET_REPLICATED_JOB_LABEL,
)
from fabricfit.workloads.base import Path, WorkloadKind, count, get_path, parse_index


class JobSet(WorkloadKind):
    name: ClassVar[str] = "JobSet"
    api_version: ClassVar[str] = "jobset.x-k8s.io/v1alpha2"
    plural: ClassVar[str] = "jobsets"
    index_label: ClassVar[str | None] = JOBSET_JOB_INDEX_LABEL
    suspend_path: ClassVar[Path | None] = ("spec", "suspend")
    # sigs.k8s.io/jobset@v0.12.0 api/jobset/v1alpha2/jobset_types.go:106-108
    finished_conditions: ClassVar[frozenset[str]] = frozenset({"Completed", "Failed"})

    def template_paths(self, workload: Mapping[str, Any]) -> list[Path]:
        jobs = get_path(workload, ("spec", "replicatedJobs"))
        total = len(jobs) if isinstance(jobs, list) else 0
        return [("spec", "replicatedJobs", i, "template", "spec", "template") for i in range(total)]

    def expected_pods(self, workload: Mapping[str, Any]) -> int | None:
        if not isinstance(get_path(workload, ("spec",)), Mapping):
            return None
        shapes = [job_shape(rj) for rj in replicated_jobs(workload)]
        sizes = [p * r for p, r in shapes if p is not None and r is not None]
        return sum(sizes) if shapes and len(sizes) == len(shapes) else None

    def template_pod_count(self, workload: Mapping[str, Any], path: Path) -> int | None:
        if len(path) <= 2 or not isinstance(path[2], int):
            return None
        rj = get_path(workload, path[:3])
        per_job, replicas = job_shape(rj) if isinstance(rj, Mapping) else (None, None)
        return per_job * replicas if per_job is not None and replicas is not None else None

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        if workload is None:
            return None
        jobs = replicated_jobs(workload)
        name = labels.get(JOBSET_REPLICATED_JOB_LABEL)
        if name is None and len(jobs) == 1:
            name = jobs[0].get("name")
        offset = 0
        for rj in jobs:
            per_job, replicas = job_shape(rj)
            if per_job is None or replicas is None:
                return None
            if rj.get("name") == name:
                job = parse_index(labels.get(JOBSET_JOB_INDEX_LABEL))
                completion = parse_index(labels.get(JOB_COMPLETION_INDEX_LABEL))
                if job is None or completion is None or job >= replicas or completion >= per_job:
                    return None
                return offset + job * per_job + completion
            offset += replicas * per_job
        return None


def replicated_jobs(workload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    jobs = get_path(workload, ("spec", "replicatedJobs"))
    return [rj for rj in jobs if isinstance(rj, Mapping)] if isinstance(jobs, list) else []


def job_shape(rj: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(pods per job, jobs) of a replicated job; None where unknown or not Indexed."""
    spec = get_path(rj, ("template", "spec"))
    if not isinstance(spec, Mapping) or spec.get("completionMode", "Indexed") != "Indexed":
        return None, None
    per_job = count(spec.get("completions"), None) or count(spec.get("parallelism"), 1)
    return per_job, count(rj.get("replicas"), 1)


KIND = JOBSET = JobSet()
