"""JobSet: a template per replicated job; pods count in spec order across replicated jobs."""

from __future__ import annotations

from fabricfit.workloads.jobset import JOBSET

JS = {
    "spec": {
        "replicatedJobs": [
            {"name": "driver", "template": {"spec": {"completions": 1, "template": {"d": 1}}}},
            {"name": "w", "replicas": 2, "template": {"spec": {"parallelism": 3, "template": {}}}},
        ]
    }
}


def labels(job: str, job_index: int, completion: int) -> dict[str, str]:
    return {
        "jobset.sigs.k8s.io/replicatedjob-name": job,
        "jobset.sigs.k8s.io/job-index": str(job_index),
        "batch.kubernetes.io/job-completion-index": str(completion),
    }


def test_sizes_per_replicated_job_and_in_total() -> None:
    paths = JOBSET.template_paths(JS)
    assert [JOBSET.template_pod_count(JS, p) for p in paths] == [1, 6]
    assert JOBSET.expected_pods(JS) == 7
    assert JOBSET.rank_template(JS) == {}  # the last replicated job's template


def test_global_index_follows_spec_order() -> None:
    assert JOBSET.local_index(labels("driver", 0, 0), JS, None) == 0
    assert JOBSET.local_index(labels("w", 0, 2), JS, None) == 3
    assert JOBSET.local_index(labels("w", 1, 0), JS, None) == 4
    assert JOBSET.local_index(labels("w", 2, 0), JS, None) is None  # only 2 replicas
    assert JOBSET.local_index(labels("w", 0, 0), None, None) is None  # needs the workload
