"""gpusPerPod from the workload: taken from its GPU request when omitted, a problem naming both
numbers when the spec says otherwise, left alone when the template requests no GPUs; the
operator and `fabricfit plan` (admit) decide alike."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit import policy

REF = {"apiVersion": "batch/v1", "kind": "Job", "name": "trays"}


def spec(**fields: Any) -> dict[str, Any]:
    return {"workloadRef": REF, **fields}


def template(gpus: int | None) -> dict[str, Any]:
    resources = {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus is not None else {}
    return {"spec": {"containers": [{"name": "c", "resources": resources}]}}


def job(gpus: int, pods: int) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "trays"},
        "spec": {"completions": pods, "parallelism": pods, "completionMode": "Indexed",
                 "template": template(gpus)},
    }  # fmt: skip


def settle(raw: dict[str, Any], gpus: int | None) -> tuple[Any, tuple[str, ...]]:
    parsed, problems = policy.parse_spec(raw)
    assert parsed is not None and problems == ()
    return policy.settle_gpus_per_pod(raw, parsed, template(gpus))


def test_omitted_is_taken_from_the_workload() -> None:
    settled, problems = settle(spec(parallelism={"tensor": 4, "data": 18}), 4)  # GB200 trays
    assert problems == () and settled.gpus_per_pod == 4 and settled.pods == 18


def test_a_different_number_names_both() -> None:
    _, problems = settle(spec(gpusPerPod=8, parallelism={"tensor": 8, "data": 2}), 4)
    assert problems == ("gpusPerPod is 8 but Job trays requests 4 nvidia.com/gpu per pod",)


def test_an_inferred_number_is_checked_like_a_given_one() -> None:
    raw = spec(parallelism={"tensor": 3})  # admitted: gpusPerPod is not set yet
    _, problems = settle(raw, 2)
    assert any("multiple of gpusPerPod" in p for p in problems), problems


@pytest.mark.parametrize("gpus", [None, 0])
def test_no_gpu_request_leaves_the_spec(gpus: int | None) -> None:
    settled, problems = settle(spec(gpusPerPod=2, parallelism={"tensor": 2}), gpus)
    assert problems == () and settled.gpus_per_pod == 2


def test_admit_uses_the_settled_number_for_the_pod_count() -> None:
    admitted = policy.admit(spec(parallelism={"tensor": 4, "data": 18}), job(4, 18))
    assert admitted.problems == () and admitted.spec is not None
    assert admitted.spec.gpus_per_pod == 4 and admitted.request is not None
    wrong = policy.admit(spec(parallelism={"tensor": 4, "data": 18}), job(4, 9))
    assert "runs 9 pods but the spec needs 18" in wrong.message
