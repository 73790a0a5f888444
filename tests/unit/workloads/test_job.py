"""Job: one template; an Indexed Job's pod k is completion index k."""

from __future__ import annotations

from fabricfit.workloads.job import JOB

INDEXED = {"spec": {"completionMode": "Indexed", "completions": 4, "suspend": True,
                    "template": {"spec": {}}}}  # fmt: skip


def test_the_job_template_carries_the_ranks() -> None:
    assert JOB.template_paths(INDEXED) == [("spec", "template")]
    assert JOB.rank_template(INDEXED) == {"spec": {}}


def test_only_indexed_jobs_have_a_known_size() -> None:
    assert JOB.expected_pods(INDEXED) == 4
    assert JOB.template_pod_count(INDEXED, ("spec", "template")) == 4
    assert JOB.expected_pods({"spec": {"completions": 4}}) is None


def test_the_completion_index_is_the_pod_index_without_the_workload() -> None:
    labels = {"batch.kubernetes.io/job-completion-index": "3"}
    assert JOB.index_without_workload and JOB.local_index(labels, None, None) == 3
    assert JOB.local_index({"batch.kubernetes.io/job-completion-index": "03"}, None, None) is None


def test_suspend_and_unsuspend() -> None:
    assert JOB.is_suspended(INDEXED) is True
    assert JOB.unsuspend_patch() == {"spec": {"suspend": False}}
    assert not JOB.allows_pod_affinity
