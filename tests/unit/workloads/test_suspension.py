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


def _with(condition: str, status: str = "True") -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Suspended", "status": "True"},
                                      {"type": condition, "status": status}]}}  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "workload", "said"),
    [
        ("Job", _with("Complete"), "Complete"),
        ("Job", _with("Failed"), "Failed"),
        ("Job", _with("Complete", "False"), None),
        ("Job", _with("SuccessCriteriaMet"), None),  # interim: Complete follows
        ("JobSet", _with("Completed"), "Completed"),
        ("JobSet", _with("Complete"), None),
        ("PyTorchJob", _with("Succeeded"), "Succeeded"),
        ("TrainJob", _with("Complete"), "Complete"),
        ("LeaderWorkerSet", _with("Complete"), None),  # a serving group never finishes
        ("Pod", _with("Complete"), None),
        ("Job", {"status": {"conditions": "bogus"}}, None),
    ],
)
def test_finished_reads_the_kind_s_own_terminal_conditions(
    kind: str, workload: dict[str, Any], said: str | None
) -> None:
    from fabricfit.workloads import finished

    assert finished(kind, workload) == said
    assert finished(kind, None) is None
