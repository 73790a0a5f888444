"""Plain Pods: the selected group is the workload; the index label names pod k."""

from __future__ import annotations

from fabricfit.workloads.pod import POD

GROUP = {"kind": "PodGroup", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}


def test_the_first_pod_stands_in_for_the_template() -> None:
    assert POD.selects_pods and POD.template_paths(GROUP) == []
    assert POD.rank_template(GROUP) == {"metadata": {"name": "a"}}
    assert POD.rank_template({"items": []}) is None


def test_the_index_label_is_the_pod_index() -> None:
    assert POD.local_index({"rank": "1"}, None, "rank") == 1
    assert POD.local_index({"rank": "1"}, None, None) is None
    assert POD.index_without_workload and POD.expected_pods(GROUP) is None
    assert POD.rbac_verbs == ("list", "patch") and POD.unsuspend_patch() is None
