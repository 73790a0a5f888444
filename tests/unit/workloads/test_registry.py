"""The workload-kind registry: every kind is addressable, and its parts agree with each other."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.api.models import WorkloadRef
from fabricfit.kube.workloads import UnsupportedWorkloadError, kind_of
from fabricfit.workloads import KINDS, kind_named, pod_index, rank_template
from fabricfit.workloads.base import WorkloadKind

NAMES = (
    "Deployment",
    "Job",
    "JobSet",
    "LeaderWorkerSet",
    "Pod",
    "PyTorchJob",
    "StatefulSet",
    "TrainJob",
)


def test_the_registry_finds_every_kind_module_in_module_order() -> None:
    assert tuple(KINDS) == NAMES
    assert all(kind_named(n) is KINDS[n] and KINDS[n].name == n for n in NAMES)
    assert kind_named("CronJob") is None
    assert len({(k.api_group, k.plural) for k in KINDS.values()}) == len(KINDS)


@pytest.mark.parametrize("kind", KINDS.values(), ids=lambda k: k.name)
def test_each_kind_is_complete(kind: WorkloadKind) -> None:
    assert kind.api_version.count("/") <= 1 and kind.api_version.endswith(tuple("0123456789"))
    assert kind.plural == kind.plural.lower() and kind.plural.endswith("s")
    assert kind.rbac_verbs and set(kind.rbac_verbs) <= {"get", "list", "patch"}
    if kind.selects_pods:
        assert kind.template_paths({}) == [] and kind.suspend_path is None
    else:
        assert kind.index_label is not None
        # Templates are found where the kind says, and the rank template is one of them.
        workload = {"spec": {}}
        assert kind.pod_templates(workload) == []
        assert rank_template(kind.name, workload) is None
    if kind.suspend_path is not None:
        patch = kind.unsuspend_patch()
        assert patch is not None and kind.is_suspended(patch) is False
    else:
        assert kind.unsuspend_patch() is None and kind.is_suspended({}) is None


@pytest.mark.parametrize("kind", KINDS.values(), ids=lambda k: k.name)
def test_kinds_read_at_their_own_api_version(kind: WorkloadKind) -> None:
    ref = WorkloadRef.model_validate(
        {"apiVersion": kind.api_version, "kind": kind.name, "name": "w"}
        if not kind.selects_pods
        else {"apiVersion": "v1", "kind": "Pod", "podSelector": {"a": "b"}, "indexLabel": "i"}
    )
    assert kind_of(ref) is kind


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"apiVersion": "batch/v1", "kind": "CronJob", "name": "w"}, "not supported"),
        ({"apiVersion": "apps/v1", "kind": "Job", "name": "w"}, "API group batch"),
        ({"apiVersion": "v2", "kind": "Pod", "podSelector": {"a": "b"}}, "apiVersion v1"),
    ],
)
def test_foreign_kinds_and_groups_are_refused(ref: dict[str, Any], message: str) -> None:
    with pytest.raises(UnsupportedWorkloadError, match=message):
        kind_of(WorkloadRef.model_validate(ref))


def test_only_kinds_indexed_by_labels_alone_take_the_fast_path() -> None:
    labels = {"batch.kubernetes.io/job-completion-index": "3", "i": "5"}
    pod = {"metadata": {"labels": {**labels, "apps.kubernetes.io/pod-index": "4"}}}
    for kind in KINDS.values():
        index = pod_index(kind.name, pod, index_label="i")
        if kind.index_without_workload:
            assert index is not None, kind.name
    assert pod_index("Job", pod) == 3
    assert pod_index("Pod", pod, index_label="i") == 5
    assert pod_index("StatefulSet", pod) == 4
