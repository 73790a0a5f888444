"""StatefulSet: pod k is ordinal k (apps.kubernetes.io/pod-index); one Kueue pod group."""

from __future__ import annotations

from fabricfit.workloads import pod_index
from fabricfit.workloads.statefulset import STATEFULSET as STS

SET = {"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c"}]}}}}


def test_ordinal_is_the_index() -> None:
    assert STS.expected_pods(SET) == 3
    assert STS.expected_pods({"spec": {}}) == 1  # replicas defaults to 1
    assert STS.local_index({"apps.kubernetes.io/pod-index": "2"}, None, None) == 2
    assert STS.local_index({"apps.kubernetes.io/pod-index": "02"}, None, None) is None
    assert STS.index_without_workload  # a pod event pins it from the plan alone
    pod = {"metadata": {"labels": {"apps.kubernetes.io/pod-index": "3"}}}
    assert pod_index("StatefulSet", pod, SET) is None  # beyond the replicas


def test_one_template_one_pod_group_no_suspend() -> None:
    (path,) = STS.template_paths(SET)
    assert path == ("spec", "template")
    assert STS.template_pod_count(SET, path) == 3 and STS.kueue_workloads(SET) == 1
    assert STS.is_suspended(SET) is None and not STS.allows_pod_affinity
    assert STS.group_pods(SET) is None
