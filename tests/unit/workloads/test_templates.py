"""Workload kinds: which pod templates a workload has, and the merge patches that change them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fabricfit.workloads import build_workload_patch, pod_templates
from unit.workloads.samples import (
    JOB,
    JOBSET,
    LWS,
    LWS_NO_LEADER,
    PYTORCH,
    PYTORCH_WORKERS_ONLY,
    tmpl,
)


@pytest.mark.parametrize(
    ("kind", "workload", "paths"),
    [
        ("Job", JOB, [("spec", "template")]),
        (
            "JobSet",
            JOBSET,
            [
                ("spec", "replicatedJobs", 0, "template", "spec", "template"),
                ("spec", "replicatedJobs", 1, "template", "spec", "template"),
            ],
        ),
        (
            "PyTorchJob",
            PYTORCH,
            [
                ("spec", "pytorchReplicaSpecs", "Master", "template"),
                ("spec", "pytorchReplicaSpecs", "Worker", "template"),
            ],
        ),
        (
            "PyTorchJob",
            PYTORCH_WORKERS_ONLY,
            [("spec", "pytorchReplicaSpecs", "Worker", "template")],
        ),
        (
            "LeaderWorkerSet",
            LWS,
            [
                ("spec", "leaderWorkerTemplate", "leaderTemplate"),
                ("spec", "leaderWorkerTemplate", "workerTemplate"),
            ],
        ),
        ("LeaderWorkerSet", LWS_NO_LEADER, [("spec", "leaderWorkerTemplate", "workerTemplate")]),
        ("Pod", {}, []),
        ("Job", {}, []),
        ("CronJob", JOB, []),
    ],
)
def test_pod_templates(kind: str, workload: dict[str, Any], paths: list[tuple[Any, ...]]) -> None:
    found = pod_templates(kind, workload)
    assert [p for p, _ in found] == paths
    for path, template in found:
        node: Any = workload
        for part in path:
            node = node[part]
        assert template == node and template is not node  # a copy


def _labelled(template: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(template)
    new["metadata"]["labels"]["fabricfit.dev/topology"] = "t"
    return new


def test_job_patch_is_a_minimal_merge_diff() -> None:
    ((path, template),) = pod_templates("Job", JOB)
    new = _labelled(template)
    del new["metadata"]["labels"]["role"]
    assert build_workload_patch("Job", JOB, [(path, new)]) == {
        "spec": {
            "template": {"metadata": {"labels": {"role": None, "fabricfit.dev/topology": "t"}}}
        }
    }
    assert build_workload_patch("Job", JOB, [(path, template)]) == {}


def test_jobset_patch_replaces_the_whole_replicated_jobs_list() -> None:
    found = pod_templates("JobSet", JOBSET)
    patch = build_workload_patch("JobSet", JOBSET, [(p, _labelled(t)) for p, t in found])
    expected = copy.deepcopy(JOBSET["spec"]["replicatedJobs"])
    for rj in expected:
        rj["template"]["spec"]["template"]["metadata"]["labels"]["fabricfit.dev/topology"] = "t"
    assert patch == {"spec": {"replicatedJobs": expected}}
    assert JOBSET["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] == tmpl("a")
    assert build_workload_patch("JobSet", JOBSET, found) == {}


def test_pytorchjob_and_lws_patches_merge_per_template() -> None:
    (_, _), (worker_path, worker) = pod_templates("PyTorchJob", PYTORCH)
    patch = build_workload_patch("PyTorchJob", PYTORCH, [(worker_path, _labelled(worker))])
    assert patch == {
        "spec": {
            "pytorchReplicaSpecs": {
                "Worker": {"template": {"metadata": {"labels": {"fabricfit.dev/topology": "t"}}}}
            }
        }
    }
    found = pod_templates("LeaderWorkerSet", LWS)
    patch = build_workload_patch("LeaderWorkerSet", LWS, [(p, _labelled(t)) for p, t in found])
    label = {"metadata": {"labels": {"fabricfit.dev/topology": "t"}}}
    assert patch == {
        "spec": {"leaderWorkerTemplate": {"leaderTemplate": label, "workerTemplate": label}}
    }


def test_patch_rejects_unknown_template_paths() -> None:
    with pytest.raises(ValueError, match=r"no pod template at spec\.replicatedJobs\[5\]"):
        build_workload_patch(
            "JobSet", JOBSET, [(("spec", "replicatedJobs", 5, "template", "spec", "template"), {})]
        )
