"""Workload kinds: template paths, merge patches, global pod indexes, sizes and suspension."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.constants import (
    JOB_COMPLETION_INDEX_LABEL,
    JOBSET_JOB_INDEX_LABEL,
    JOBSET_REPLICATED_JOB_LABEL,
    KUBEFLOW_REPLICA_INDEX_LABEL,
    KUBEFLOW_REPLICA_TYPE_LABEL,
    LWS_GROUP_INDEX_LABEL,
    LWS_WORKER_INDEX_LABEL,
)
from fabricfit.render.kinds import (
    allows_pod_affinity,
    build_unsuspend_patch,
    build_workload_patch,
    expected_pods,
    is_suspended,
    pod_index,
    pod_templates,
    template_pod_count,
)
from fabricfit.render.kinds.base import parse_index
from fabricfit.render.workload import merge_diff


def tmpl(name: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"role": name}}, "spec": {"containers": [{"name": name}]}}


JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "spec": {"completionMode": "Indexed", "completions": 8, "suspend": True, "template": tmpl("t")},
}
JOBSET: dict[str, Any] = {
    "spec": {
        "suspend": True,
        "replicatedJobs": [
            {
                "name": "a",
                "replicas": 2,
                "template": {"spec": {"completions": 3, "template": tmpl("a")}},
            },
            {"name": "b", "template": {"spec": {"parallelism": 4, "template": tmpl("b")}}},
        ],
    }
}
PYTORCH: dict[str, Any] = {
    "spec": {
        "runPolicy": {"suspend": False},
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": tmpl("m")},
            "Worker": {"replicas": 3, "template": tmpl("w")},
        },
    }
}
PYTORCH_WORKERS_ONLY: dict[str, Any] = {
    "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 4, "template": tmpl("w")}}}
}
LWS: dict[str, Any] = {
    "spec": {
        "replicas": 2,
        "leaderWorkerTemplate": {
            "size": 4,
            "leaderTemplate": tmpl("l"),
            "workerTemplate": tmpl("w"),
        },
    }
}
LWS_NO_LEADER: dict[str, Any] = {"spec": {"leaderWorkerTemplate": {"workerTemplate": tmpl("w")}}}


def pod(**labels: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}}


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
        ("Deployment", JOB, []),
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


@pytest.mark.parametrize(
    ("old", "new", "diff"),
    [
        ({"a": 1}, {"a": 1}, {}),
        ({"a": 1, "b": 2}, {"a": 1}, {"b": None}),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1, "y": 3}}, {"a": {"y": 3}}),
        ({"a": [1, 2]}, {"a": [1]}, {"a": [1]}),
        ({"a": 1}, {"a": {"x": 1}}, {"a": {"x": 1}}),
        (None, {"a": 1}, {"a": 1}),
    ],
)
def test_merge_diff(old: Any, new: Any, diff: Any) -> None:
    assert merge_diff(old, new) == diff


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 apply, to check merge_diff round-trips."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


json_objects = st.recursive(
    st.dictionaries(
        st.sampled_from("abc"), st.integers(0, 3) | st.lists(st.integers(0, 2), max_size=2)
    ),
    lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=10,
)


@given(json_objects, json_objects)
def test_merge_diff_round_trips(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert _merge(old, merge_diff(old, new)) == new


CM = JOB_COMPLETION_INDEX_LABEL
INDEX_CASES: list[tuple[str, str, dict[str, Any] | None, dict[str, Any], int | None]] = [
    ("job", "Job", JOB, pod(**{CM: "5"}), 5),
    ("job without workload", "Job", None, pod(**{CM: "12"}), 12),
    ("job index beyond completions", "Job", JOB, pod(**{CM: "8"}), None),
    ("job garbage", "Job", JOB, pod(**{CM: "05"}), None),
    ("job negative", "Job", JOB, pod(**{CM: "-1"}), None),
    ("job missing", "Job", JOB, pod(), None),
    (
        "jobset a/0/0",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "0", CM: "0"}),
        0,
    ),
    (
        "jobset a/1/2",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "1", CM: "2"}),
        5,
    ),
    (
        "jobset b/0/3",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "b", JOBSET_JOB_INDEX_LABEL: "0", CM: "3"}),
        9,
    ),
    (
        "jobset completion out of range",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "0", CM: "3"}),
        None,
    ),
    (
        "jobset job out of range",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "2", CM: "0"}),
        None,
    ),
    (
        "jobset unknown rj",
        "JobSet",
        JOBSET,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "z", JOBSET_JOB_INDEX_LABEL: "0", CM: "0"}),
        None,
    ),
    (
        "jobset needs workload",
        "JobSet",
        None,
        pod(**{JOBSET_REPLICATED_JOB_LABEL: "a", JOBSET_JOB_INDEX_LABEL: "0", CM: "0"}),
        None,
    ),
    (
        "pytorch master",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "master", KUBEFLOW_REPLICA_INDEX_LABEL: "0"}),
        0,
    ),
    (
        "pytorch worker 2",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "worker", KUBEFLOW_REPLICA_INDEX_LABEL: "2"}),
        3,
    ),
    (
        "pytorch Worker capitalised",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "Worker", KUBEFLOW_REPLICA_INDEX_LABEL: "0"}),
        1,
    ),
    (
        "pytorch worker beyond replicas",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "worker", KUBEFLOW_REPLICA_INDEX_LABEL: "3"}),
        None,
    ),
    (
        "pytorch workers only",
        "PyTorchJob",
        PYTORCH_WORKERS_ONLY,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "worker", KUBEFLOW_REPLICA_INDEX_LABEL: "3"}),
        3,
    ),
    (
        "pytorch no workload assumes a master",
        "PyTorchJob",
        None,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "worker", KUBEFLOW_REPLICA_INDEX_LABEL: "3"}),
        4,
    ),
    (
        "pytorch master 1",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "master", KUBEFLOW_REPLICA_INDEX_LABEL: "1"}),
        None,
    ),
    (
        "pytorch other type",
        "PyTorchJob",
        PYTORCH,
        pod(**{KUBEFLOW_REPLICA_TYPE_LABEL: "ps", KUBEFLOW_REPLICA_INDEX_LABEL: "0"}),
        None,
    ),
    (
        "lws leader of group 1",
        "LeaderWorkerSet",
        LWS,
        pod(**{LWS_GROUP_INDEX_LABEL: "1", LWS_WORKER_INDEX_LABEL: "0"}),
        4,
    ),
    (
        "lws worker 3 of group 1",
        "LeaderWorkerSet",
        LWS,
        pod(**{LWS_GROUP_INDEX_LABEL: "1", LWS_WORKER_INDEX_LABEL: "3"}),
        7,
    ),
    (
        "lws worker beyond size",
        "LeaderWorkerSet",
        LWS,
        pod(**{LWS_GROUP_INDEX_LABEL: "0", LWS_WORKER_INDEX_LABEL: "4"}),
        None,
    ),
    (
        "lws group beyond replicas",
        "LeaderWorkerSet",
        LWS,
        pod(**{LWS_GROUP_INDEX_LABEL: "2", LWS_WORKER_INDEX_LABEL: "0"}),
        None,
    ),
    ("lws missing group", "LeaderWorkerSet", LWS, pod(**{LWS_WORKER_INDEX_LABEL: "1"}), None),
    ("unknown kind", "Deployment", JOB, pod(**{CM: "1"}), None),
]


@pytest.mark.parametrize(
    ("name", "kind", "workload", "the_pod", "index"), INDEX_CASES, ids=[c[0] for c in INDEX_CASES]
)
def test_pod_index(
    name: str,
    kind: str,
    workload: dict[str, Any] | None,
    the_pod: dict[str, Any],
    index: int | None,
) -> None:
    assert pod_index(kind, the_pod, workload) == index


def test_pod_index_for_plain_pods_uses_the_index_label() -> None:
    labelled = pod(rank="3")
    assert pod_index("Pod", labelled, index_label="rank") == 3
    assert pod_index("Pod", labelled) is None
    assert pod_index("Pod", pod(rank="x"), index_label="rank") is None
    assert pod_index("Pod", {"metadata": {"labels": None}}, index_label="rank") is None


@pytest.mark.parametrize(
    ("value", "index"),
    [
        ("0", 0),
        ("17", 17),
        ("007", None),
        ("", None),
        ("+1", None),
        (" 1", None),
        ("1.0", None),
        (3, None),
        (None, None),
        ("1" * 10, None),
        ("٣", None),
    ],
)
def test_parse_index(value: Any, index: int | None) -> None:
    assert parse_index(value) == index


@pytest.mark.parametrize(
    ("kind", "workload", "pods"),
    [
        ("Job", JOB, 8),
        ("Job", {"spec": {"completions": 8}}, None),  # NonIndexed: pods carry no index
        ("Job", {"spec": {"completionMode": "Indexed"}}, None),
        ("JobSet", JOBSET, 10),
        ("JobSet", {"spec": {"replicatedJobs": []}}, None),
        (
            "JobSet",
            {
                "spec": {
                    "replicatedJobs": [{"template": {"spec": {"completionMode": "NonIndexed"}}}]
                }
            },
            None,
        ),
        ("PyTorchJob", PYTORCH, 4),
        ("PyTorchJob", PYTORCH_WORKERS_ONLY, 4),
        ("PyTorchJob", {"spec": {"pytorchReplicaSpecs": {"Master": {}}}}, 1),
        ("PyTorchJob", {"spec": {}}, None),
        ("LeaderWorkerSet", LWS, 8),
        ("LeaderWorkerSet", LWS_NO_LEADER, 1),
        ("LeaderWorkerSet", {"spec": {"replicas": "2"}}, None),
        ("Pod", {}, None),
        ("Job", {}, None),
    ],
)
def test_expected_pods(kind: str, workload: dict[str, Any], pods: int | None) -> None:
    assert expected_pods(kind, workload) == pods


@pytest.mark.parametrize(
    ("kind", "workload", "suspended", "patch"),
    [
        ("Job", JOB, True, {"spec": {"suspend": False}}),
        ("Job", {"spec": {}}, False, {"spec": {"suspend": False}}),
        ("JobSet", JOBSET, True, {"spec": {"suspend": False}}),
        ("PyTorchJob", PYTORCH, False, {"spec": {"runPolicy": {"suspend": False}}}),
        (
            "PyTorchJob",
            {"spec": {"runPolicy": {"suspend": True}}},
            True,
            {"spec": {"runPolicy": {"suspend": False}}},
        ),
        ("LeaderWorkerSet", LWS, None, None),
        ("Pod", {}, None, None),
    ],
)
def test_suspension(
    kind: str, workload: dict[str, Any], suspended: bool | None, patch: dict[str, Any] | None
) -> None:
    assert is_suspended(kind, workload) is suspended
    assert build_unsuspend_patch(kind) == patch


def test_affinity_mutability() -> None:
    assert [
        k
        for k in ("Job", "JobSet", "PyTorchJob", "LeaderWorkerSet", "Pod")
        if allows_pod_affinity(k)
    ] == [
        "PyTorchJob",
        "LeaderWorkerSet",
    ]


@pytest.mark.parametrize(
    ("kind", "workload", "counts"),
    [
        ("Job", JOB, [8]),
        ("JobSet", JOBSET, [6, 4]),
        ("PyTorchJob", PYTORCH, [1, 3]),
        ("PyTorchJob", PYTORCH_WORKERS_ONLY, [4]),
        ("LeaderWorkerSet", LWS, [1, 3]),
        ("LeaderWorkerSet", LWS_NO_LEADER, [1]),
    ],
)
def test_template_pod_count(kind: str, workload: dict[str, Any], counts: list[int]) -> None:
    paths = [path for path, _ in pod_templates(kind, workload)]
    assert [template_pod_count(kind, workload, p) for p in paths] == counts


def test_template_pod_count_unknown() -> None:
    assert template_pod_count("Pod", {}, ("spec",)) is None
    path = ("spec", "replicatedJobs", 7, "template", "spec", "template")
    assert template_pod_count("JobSet", JOBSET, path) is None
    assert template_pod_count("Job", {"spec": {}}, ("spec", "template")) is None
