"""Kubeflow Trainer v2 TrainJob (``trainer.kubeflow.org``): fabricfit writes its own entry of
``spec.runtimePatches`` and the Trainer builds the JobSet from it.

Theory of operation
-------------------
A TrainJob has no pod template of its own: the Trainer controller builds a JobSet from the
referenced (Cluster)TrainingRuntime and merges ``spec.runtimePatches`` into it, one entry per
manager. fabricfit targets the TrainJob, not the JobSet it produces: the Trainer re-applies
that JobSet while the TrainJob is suspended, and it is the TrainJob's ``spec.suspend`` that
lets it start. Its template is the pod template of the trainer's replicated job (``node``, the
name every Trainer runtime gives it) inside fabricfit's entry (manager
``fabricfit.dev/placement``), which the Trainer accepts while the TrainJob is suspended; that
entry is created empty when it is missing. Patches rewrite the whole ``runtimePatches`` list,
the other managers' entries as read.

Pod k is the completion index of the ``node`` job (the Trainer's ``PET_NODE_RANK``); pods of
other replicated jobs (initializers) carry no rank. The pods are ``spec.trainer.numNodes``
(unknown when only the runtime sets it). The rank template shows what the TrainJob says about
its pods: ``resourcesPerNode`` as a container's resources and the node selectors, affinity and
tolerations of every manager's patch; constraints written in the runtime itself are not read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from fabricfit.api.constants import (
    JOB_COMPLETION_INDEX_LABEL,
    JOBSET_JOB_INDEX_LABEL,
    JOBSET_REPLICATED_JOB_LABEL,
)
from fabricfit.workloads.base import Path, WorkloadKind, count, get_path, parse_index

#: fabricfit's ``runtimePatches`` manager (the Trainer wants a domain-prefixed name).
MANAGER: Final = "fabricfit.dev/placement"
#: The replicated job of a Trainer runtime that runs the training ranks.
TRAINER_JOB: Final = "node"
_PATCHES: Final = ("spec", "runtimePatches")
_JOBS: Final = ("trainingRuntimeSpec", "template", "spec", "replicatedJobs")
_POD_TEMPLATE: Final = ("template", "spec", "template")


class TrainJob(WorkloadKind):
    name: ClassVar[str] = "TrainJob"
    api_version: ClassVar[str] = "trainer.kubeflow.org/v1alpha1"
    plural: ClassVar[str] = "trainjobs"
    index_label: ClassVar[str | None] = JOB_COMPLETION_INDEX_LABEL
    suspend_path: ClassVar[Path | None] = ("spec", "suspend")
    # github.com/kubeflow/trainer/v2@v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go:61-64
    finished_conditions: ClassVar[frozenset[str]] = frozenset({"Complete", "Failed"})

    def patchable(self, workload: Mapping[str, Any]) -> Mapping[str, Any]:
        """``workload`` with fabricfit's entry for the ``node`` job present (empty template)."""
        if not isinstance(get_path(workload, ("spec", "runtimeRef")), Mapping):
            return workload
        view = copy.deepcopy(dict(workload))
        patches = view["spec"].get("runtimePatches")
        if not isinstance(patches, list):
            patches = view["spec"]["runtimePatches"] = []
        entry = next((p for p in patches if _is_ours(p)), None)
        if entry is None:
            entry = {"manager": MANAGER}
            patches.append(entry)
        jobs = get_path(entry, _JOBS)
        if not isinstance(jobs, list):
            jobs = []
            entry["trainingRuntimeSpec"] = {"template": {"spec": {"replicatedJobs": jobs}}}
        job = next((j for j in jobs if isinstance(j, dict) and j.get("name") == TRAINER_JOB), None)
        if job is None:
            jobs.append({"name": TRAINER_JOB})
            job = jobs[-1]
        if not isinstance(get_path(job, _POD_TEMPLATE), Mapping):
            job["template"] = {"spec": {"template": {}}}
        return view

    def template_paths(self, workload: Mapping[str, Any]) -> list[Path]:
        view = self.patchable(workload)
        patches = get_path(view, _PATCHES)
        if not isinstance(patches, list):
            return []
        for i, entry in enumerate(patches):
            jobs = get_path(entry, _JOBS) if _is_ours(entry) else None
            for j, job in enumerate(jobs if isinstance(jobs, list) else []):
                if isinstance(job, Mapping) and job.get("name") == TRAINER_JOB:
                    return [(*_PATCHES, i, *_JOBS, j, *_POD_TEMPLATE)]
        return []

    def pod_templates(self, workload: Mapping[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
        return super().pod_templates(self.patchable(workload))

    def rank_template(self, workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        if not isinstance(get_path(workload, ("spec", "runtimeRef")), Mapping):
            return None
        spec: dict[str, Any] = {}
        resources = get_path(workload, ("spec", "trainer", "resourcesPerNode"))
        if isinstance(resources, Mapping):
            spec["containers"] = [{"name": TRAINER_JOB, "resources": copy.deepcopy(resources)}]
        patches = get_path(workload, _PATCHES)
        for entry in patches if isinstance(patches, list) else []:
            _merge_constraints(spec, _node_pod_spec(entry))
        return {"metadata": {}, "spec": spec}

    def expected_pods(self, workload: Mapping[str, Any]) -> int | None:
        return count(get_path(workload, ("spec", "trainer", "numNodes")), None)

    def template_pod_count(self, workload: Mapping[str, Any], path: Path) -> int | None:
        return self.expected_pods(workload) if path in self.template_paths(workload) else None

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        if labels.get(JOBSET_REPLICATED_JOB_LABEL) != TRAINER_JOB:
            return None
        if parse_index(labels.get(JOBSET_JOB_INDEX_LABEL)) != 0:
            return None  # the trainer job has one replica
        return parse_index(labels.get(JOB_COMPLETION_INDEX_LABEL))


def _is_ours(entry: Any) -> bool:
    return isinstance(entry, Mapping) and entry.get("manager") == MANAGER


def _node_pod_spec(entry: Any) -> Mapping[str, Any]:
    jobs = get_path(entry, _JOBS)
    for job in jobs if isinstance(jobs, list) else []:
        if isinstance(job, Mapping) and job.get("name") == TRAINER_JOB:
            spec = get_path(job, (*_POD_TEMPLATE, "spec"))
            return spec if isinstance(spec, Mapping) else {}
    return {}


def _merge_constraints(into: dict[str, Any], spec: Mapping[str, Any]) -> None:
    """Later patches win, as the Trainer's strategic merge applies them in list order."""
    selector = spec.get("nodeSelector")
    if isinstance(selector, Mapping):
        into["nodeSelector"] = {**into.get("nodeSelector", {}), **selector}
    tolerations = spec.get("tolerations")
    if isinstance(tolerations, list):
        into["tolerations"] = [*into.get("tolerations", []), *copy.deepcopy(tolerations)]
    if isinstance(spec.get("affinity"), Mapping):
        into["affinity"] = copy.deepcopy(spec["affinity"])


KIND = TRAINJOB = TrainJob()
