"""Spec models: defaults, camelCase aliases, frozen instances, and rejection of unknown fields and
out-of-bounds values at every level (the same bounds the CRD schema carries)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import ValidationError

from fabricfit.api.constants import DEFAULT_RANK_ORDER
from fabricfit.api.models import TrainingTopologySpec

VALID: dict[str, Any] = {
    "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "llama-70b"},
    "gpusPerPod": 8,
    "parallelism": {"tensor": 8, "pipeline": 4, "data": 16},
    "model": {"hiddenSize": 8192, "layers": 80, "experts": 0},
    "fabric": "dgx-h100",
    "queueName": "team-a",
    "placement": {"mode": "kueue-tas", "data": "Required"},
}


def with_value(path: str, value: Any) -> dict[str, Any]:
    spec = copy.deepcopy(VALID)
    *parents, leaf = path.split(".")
    node = spec
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return spec


def test_defaults() -> None:
    spec = TrainingTopologySpec()
    assert spec.workload_ref is None and spec.model is None
    assert spec.gpus_per_pod == 8
    assert spec.parallelism.model_dump() == dict.fromkeys(
        ("tensor", "pipeline", "data", "expert", "context"), 1
    )
    assert spec.rank_order == DEFAULT_RANK_ORDER
    assert (spec.label_scheme, spec.fabric, spec.queue_name) == ("auto", None, None)
    assert spec.placement.model_dump() == {
        "mode": "pinned",
        "tensor": "Required",
        "data": "Preferred",
        "spares": None,
        "queue_policy": None,  # the operator's --queue-policy
    }


def test_camel_case_aliases_round_trip() -> None:
    spec = TrainingTopologySpec.model_validate(VALID)
    assert spec.workload_ref is not None and spec.workload_ref.api_version == "batch/v1"
    assert spec.model is not None and spec.model.hidden_size == 8192
    dumped = spec.model_dump(by_alias=True, exclude_none=True)
    assert {"workloadRef", "gpusPerPod", "rankOrder", "labelScheme", "queueName"} <= set(dumped)
    assert "hiddenSize" in dumped["model"] and "topK" in dumped["model"]
    assert TrainingTopologySpec.model_validate(dumped) == spec


def test_snake_case_names_are_accepted_too() -> None:
    assert TrainingTopologySpec(gpus_per_pod=4).gpus_per_pod == 4


def test_world_size_and_pods() -> None:
    spec = TrainingTopologySpec.model_validate(VALID)
    assert (spec.world_size, spec.pods) == (512, 64)


def test_models_are_frozen() -> None:
    spec = TrainingTopologySpec.model_validate(VALID)
    with pytest.raises(ValidationError):
        spec.gpus_per_pod = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    "path",
    ["gpuPerPod", "parallelism.tensors", "model.hidden", "placement.modes", "workloadRef.uid"],
)
def test_unknown_fields_are_rejected(path: str) -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        TrainingTopologySpec.model_validate(with_value(path, 1))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("gpusPerPod", 0),
        ("gpusPerPod", 65),
        ("parallelism.tensor", 0),
        ("parallelism.data", 65537),
        ("model.bytesPerElement", 9),
        ("model.zeroStage", 4),
        ("model.experts", -1),
        ("rankOrder", "tp-cp-ep-dp"),
        ("rankOrder", "tp-tp-ep-dp-pp"),
        ("fabric", "DGX_H100"),
        ("queueName", "q" * 64),
        ("labelScheme", "Azure_1"),  # the name's form; which names exist is the policy's
        ("placement.mode", "strict"),
        ("placement.tensor", "required"),
        ("workloadRef.apiVersion", "batch"),
        ("workloadRef.kind", "job"),
        ("workloadRef.name", "Llama_70B"),
        ("workloadRef.name", "a" * 254),
        ("workloadRef.indexLabel", "bad label"),
        ("workloadRef.podSelector", {f"k{i}": "v" for i in range(17)}),
        ("workloadRef.podSelector", {"app": "v" * 64}),
        ("workloadRef.podSelector", {"app": "-bad"}),
    ],
)
def test_out_of_bounds_values_are_rejected(path: str, value: Any) -> None:
    with pytest.raises(ValidationError):
        TrainingTopologySpec.model_validate(with_value(path, value))


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("gpusPerPod", 64),
        ("parallelism.data", 65536),
        ("rankOrder", "dp-tp-cp-pp-ep"),
        ("workloadRef.name", "llama-70b.v2"),
        ("workloadRef.indexLabel", "batch.kubernetes.io/job-completion-index"),
        ("workloadRef.podSelector", {"app.kubernetes.io/name": "llama", "tier": ""}),
        ("workloadRef.apiVersion", "jobset.x-k8s.io/v1alpha2"),
    ],
)
def test_boundary_values_are_accepted(path: str, value: Any) -> None:
    TrainingTopologySpec.model_validate(with_value(path, value))
