"""Workload kinds: suspension and whether a template's pod affinity may still change."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.workloads import allows_pod_affinity, build_unsuspend_patch, is_suspended
from unit.workloads.samples import JOB, JOBSET, LWS, PYTORCH


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
