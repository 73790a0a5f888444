"""TrainJob: fabricfit's own runtimePatches entry is the template; pod k is the completion index
of the trainer's ``node`` job; numNodes pods; the TrainJob's constraints make the rank template."""

from __future__ import annotations

import copy
from typing import Any

from fabricfit.policy import admit
from fabricfit.workloads import build_unsuspend_patch, build_workload_patch, pod_templates
from fabricfit.workloads.trainjob import MANAGER, TRAINJOB

OTHER = {
    "manager": "example.com/team",
    "time": "2026-12-03T10:00:00Z",
    "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {
            "nodeSelector": {"pool": "a"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        }}}}},
    ]}}},
}  # fmt: skip
TJ: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainJob",
    "metadata": {"name": "tj"},
    "spec": {
        "suspend": True,
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 3, "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}},
        "runtimePatches": [OTHER],
    },
}
GATED = {"metadata": {"labels": {"fabricfit.dev/topology": "t"}},
         "spec": {"schedulingGates": [{"name": "fabricfit.dev/placement"}]}}  # fmt: skip


def merge(target: Any, patch: Any) -> Any:
    """RFC 7386, as the API server applies a merge patch to a custom resource."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge(out.get(key), value)
    return out


def labels(job: str, job_index: int, completion: int) -> dict[str, str]:
    return {
        "jobset.sigs.k8s.io/replicatedjob-name": job,
        "jobset.sigs.k8s.io/job-index": str(job_index),
        "batch.kubernetes.io/job-completion-index": str(completion),
    }


def test_the_template_is_an_entry_of_fabricfits_own_created_on_the_first_patch() -> None:
    ((path, template),) = pod_templates("TrainJob", TJ)
    assert template == {} and path[:3] == ("spec", "runtimePatches", 1)
    patch = build_workload_patch("TrainJob", TJ, [(path, GATED)])
    patches = patch["spec"]["runtimePatches"]
    assert patches[0] == OTHER  # the other manager's entry kept as read
    assert patches[1]["manager"] == MANAGER
    (job,) = patches[1]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert job == {"name": "node", "template": {"spec": {"template": GATED}}}
    # Applied (and stamped by the Trainer's defaulting webhook), the same change is no change.
    applied = merge(TJ, patch)
    applied["spec"]["runtimePatches"][1]["time"] = "2026-12-03T10:01:00Z"
    ((again, current),) = pod_templates("TrainJob", applied)
    assert again == path and current == GATED
    assert build_workload_patch("TrainJob", applied, [(again, GATED)]) == {}
    assert TJ["spec"]["runtimePatches"] == [OTHER]  # nothing mutated


def test_a_trainjob_without_a_runtime_has_no_template() -> None:
    assert pod_templates("TrainJob", {"spec": {}}) == []
    assert TRAINJOB.rank_template({"spec": {}}) is None


def test_pods_are_the_completion_indexes_of_the_node_job() -> None:
    assert TRAINJOB.expected_pods(TJ) == 3
    assert TRAINJOB.expected_pods({"spec": {"runtimeRef": {"name": "r"}}}) is None
    assert TRAINJOB.local_index(labels("node", 0, 2), TJ, None) == 2
    assert TRAINJOB.local_index(labels("node", 0, 2), None, None) == 2
    assert TRAINJOB.local_index(labels("dataset-initializer", 0, 0), TJ, None) is None
    assert TRAINJOB.local_index(labels("node", 1, 0), TJ, None) is None
    (path,) = TRAINJOB.template_paths(TJ)
    assert TRAINJOB.template_pod_count(TJ, path) == 3


def test_the_rank_template_carries_resources_and_every_patch_constraint() -> None:
    later = copy.deepcopy(OTHER)
    later["manager"] = "example.com/later"
    node = later["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    node["template"]["spec"]["template"]["spec"] = {"nodeSelector": {"pool": "b", "zone": "z"}}
    tj = copy.deepcopy(TJ)
    tj["spec"]["runtimePatches"].append(later)
    template = TRAINJOB.rank_template(tj)
    assert template is not None
    spec = template["spec"]
    assert spec["nodeSelector"] == {"pool": "b", "zone": "z"}  # later patches win
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert spec["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": "8"}}
    # gpusPerPod is settled from resourcesPerNode, as for any kind's rank template.
    ref = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "tj"}
    admission = admit({"workloadRef": ref, "parallelism": {"tensor": 8, "data": 3}}, tj)
    assert admission.request is not None and admission.spec is not None
    assert admission.spec.gpus_per_pod == 8


def test_suspension_is_the_trainjobs_own() -> None:
    assert TRAINJOB.is_suspended(TJ) is True
    assert build_unsuspend_patch("TrainJob") == {"spec": {"suspend": False}}
