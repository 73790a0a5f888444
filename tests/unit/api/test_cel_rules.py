"""The CEL rules of the CRD, evaluated with cel-python after API-server-style defaulting: valid
specs pass every rule, each crafted invalid spec fails exactly the rule meant to catch it, and
the world-size rules agree with plain integer arithmetic (no int64 overflow) everywhere; the
Python twins of the rules (``violations``) report exactly what CEL reports."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.api.rules import ALL_RULES, MAX_PODS, violations

Check = Callable[..., list[str]]

BASE: dict[str, Any] = {
    "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "llama-70b"},
    "gpusPerPod": 8,
    "parallelism": {"tensor": 8, "pipeline": 4, "data": 4},
    "model": {"layers": 80},
}
SERVING = {"decodeBatch": 64, "promptTokens": 2048}
POD_REF = {
    "apiVersion": "v1",
    "kind": "Pod",
    "podSelector": {"app": "bert"},
    "indexLabel": "example.com/pod-index",
}


def spec_with(**changes: Any) -> dict[str, Any]:
    """BASE with top-level keys replaced (None deletes); parallelism and model are merged."""
    spec = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        elif key in ("parallelism", "model") and key in spec:
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    return spec


VALID = {
    "dense": spec_with(),
    # No gpusPerPod: the operator takes the workload's GPU request, then checks these rules.
    "defaults alone, gpusPerPod left to the workload": {"workloadRef": BASE["workloadRef"]},
    "no model": spec_with(model=None, parallelism={"expert": 2}),
    "moe, expert == experts": spec_with(
        parallelism={"data": 8, "expert": 8}, model={"experts": 8, "topK": 2}
    ),
    "moe, topK == experts": spec_with(model={"experts": 4, "topK": 4}),
    "pods": spec_with(workloadRef=POD_REF, parallelism={"tensor": 8, "pipeline": 1, "data": 2}),
    "exactly the pod limit": spec_with(
        gpusPerPod=1, parallelism={"tensor": 1, "pipeline": 1, "data": MAX_PODS}, model=None
    ),
    "layers == pipeline": spec_with(model={"layers": 4}),
    "one pod": spec_with(parallelism={"tensor": 8, "pipeline": 1, "data": 1}, model=None),
    "serving, defaults": spec_with(serving=SERVING, parallelism={"pipeline": 1}),
    "serving, pipeline with data slowest": spec_with(serving=SERVING, rankOrder="tp-cp-ep-pp-dp"),
    "serving, a decode side paired, with targets": spec_with(
        parallelism={"pipeline": 1},
        serving={
            **SERVING,
            "role": "decode",
            "pairedWith": "llama-prefill",
            "spread": "Rack",
            "targets": {"timePerOutputTokenSeconds": 0.05},
        },
    ),
    "grouped-query attention": spec_with(model={"attentionHeads": 64, "kvHeads": 8}),
    "head dimension given": spec_with(model={"attentionHeads": 3, "headDim": 128}),
    "wait-if-faster through the AdmissionCheck": spec_with(
        placement={"mode": "admission-check", "queuePolicy": "wait-if-faster"}
    ),
    "strict-fifo in any mode": spec_with(placement={"queuePolicy": "strict-fifo"}),
}

INVALID = {
    "no workloadRef": (spec_with(workloadRef=None), "workloadRef is required"),
    "expert does not divide data": (
        spec_with(parallelism={"data": 4, "expert": 3}, model={"experts": 6, "topK": 1}),
        "must divide parallelism.data",
    ),
    "world not a multiple of gpusPerPod": (
        spec_with(parallelism={"tensor": 3, "pipeline": 1, "data": 1}),
        "multiple of gpusPerPod",
    ),
    "too many pods": (
        spec_with(gpusPerPod=1, parallelism={"tensor": 1, "pipeline": 1, "data": MAX_PODS + 1}),
        f"at most {MAX_PODS} pods",
    ),
    "product would overflow int64": (
        spec_with(
            gpusPerPod=64,
            parallelism={"tensor": 65536, "pipeline": 65536, "data": 65536, "context": 65536},
            model=None,
        ),
        f"at most {MAX_PODS} pods",
    ),
    "experts not a multiple of expert": (
        spec_with(parallelism={"data": 8, "expert": 4}, model={"experts": 6, "topK": 2}),
        "model.experts must be a multiple of parallelism.expert",
    ),
    "expert above experts": (
        spec_with(parallelism={"data": 16, "expert": 16}, model={"experts": 8, "topK": 2}),
        "model.experts must be a multiple of parallelism.expert",
    ),
    "expert parallelism on a dense model": (
        spec_with(parallelism={"data": 4, "expert": 2}),
        "needs an MoE model",
    ),
    "moe without topK": (spec_with(model={"experts": 8}), "1 <= topK <= experts"),
    "topK above experts": (spec_with(model={"experts": 2, "topK": 3}), "1 <= topK <= experts"),
    "topK on a dense model": (spec_with(model={"topK": 2}), "only to MoE models"),
    "more stages than layers": (spec_with(model={"layers": 2}), "at least one layer"),
    "job without name": (
        spec_with(workloadRef={"apiVersion": "batch/v1", "kind": "Job"}),
        "name is required unless kind is Pod",
    ),
    "pods without selector": (
        spec_with(workloadRef={**POD_REF, "podSelector": None}),
        "kind Pod needs podSelector",
    ),
    "pods with an empty selector": (
        spec_with(workloadRef={**POD_REF, "podSelector": {}}),
        "kind Pod needs podSelector",
    ),
    "pods without index label": (
        spec_with(workloadRef={"apiVersion": "v1", "kind": "Pod", "podSelector": {"a": "b"}}),
        "kind Pod needs podSelector",
    ),
    "serving with context parallelism": (
        spec_with(serving=SERVING, parallelism={"context": 2, "pipeline": 1}),
        "parallelism.context must be 1 with spec.serving",
    ),
    "serving pipeline with data not slowest": (
        spec_with(serving=SERVING),
        "rankOrder must end with dp",
    ),
    "a replica paired": (
        spec_with(serving={**SERVING, "pairedWith": "other"}, parallelism={"pipeline": 1}),
        "it needs role prefill or decode",
    ),
    "targets without a target": (
        spec_with(serving={**SERVING, "targets": {}}, parallelism={"pipeline": 1}),
        "needs timePerOutputTokenSeconds or timeToFirstTokenSeconds",
    ),
    "kv heads not dividing the heads": (
        spec_with(model={"attentionHeads": 64, "kvHeads": 6}),
        "model.kvHeads must divide model.attentionHeads",
    ),
    "heads not dividing the hidden size": (
        spec_with(model={"hiddenSize": 4096, "attentionHeads": 3}),
        "model.attentionHeads must divide model.hiddenSize",
    ),
    "pods in another group": (
        spec_with(workloadRef={**POD_REF, "apiVersion": "apps/v1"}),
        "served by apiVersion v1",
    ),
    "wait-if-faster without Kueue": (
        spec_with(placement={"mode": "pinned", "queuePolicy": "wait-if-faster"}),
        "needs placement.mode admission-check",
    ),
    "wait-if-faster in the default mode": (
        spec_with(placement={"queuePolicy": "wait-if-faster"}),
        "needs placement.mode admission-check",
    ),
}


def _drop_nulls(spec: dict[str, Any]) -> dict[str, Any]:
    ref = spec.get("workloadRef")
    if isinstance(ref, dict):
        spec["workloadRef"] = {k: v for k, v in ref.items() if v is not None}
    return spec


@pytest.mark.parametrize("spec", VALID.values(), ids=VALID.keys())
def test_valid_spec_passes_every_rule(spec: dict[str, Any], spec_failures: Check) -> None:
    assert spec_failures(spec) == []


@pytest.mark.parametrize(("spec", "expected"), INVALID.values(), ids=INVALID.keys())
def test_invalid_spec_fails_exactly_its_rule(
    spec: dict[str, Any], expected: str, spec_failures: Check
) -> None:
    failures = spec_failures(_drop_nulls(spec))
    assert len(failures) == 1, failures
    assert expected in failures[0]


@pytest.mark.parametrize(
    "spec",
    [*VALID.values(), *(spec for spec, _ in INVALID.values())],
    ids=[*VALID.keys(), *INVALID.keys()],
)
def test_python_twins_report_what_cel_reports(spec: dict[str, Any], spec_failures: Check) -> None:
    spec = _drop_nulls(copy.deepcopy(spec))
    assert sorted(violations(TrainingTopologySpec.model_validate(spec))) == sorted(
        spec_failures(spec)
    )


def test_every_rule_but_transitions_has_a_twin_and_a_failing_case() -> None:
    specs = [_spec(spec) for spec, _ in INVALID.values()]
    for rule in ALL_RULES:
        assert (rule.holds is None) == ("oldSelf" in rule.cel), rule.cel
        assert (rule.explain is None) == (rule.message_expression is None), rule.cel
        holds = rule.holds
        assert holds is None or any(not holds(spec) for spec in specs), rule.message


def test_world_size_message_carries_its_numbers(spec_failures: Check) -> None:
    spec = spec_with(gpusPerPod=8, parallelism={"tensor": 3, "pipeline": 2, "data": 1})
    expected = (
        "world size tensor·pipeline·data·context = 3·2·1·1 = 6 is not a multiple of "
        "gpusPerPod 8: every pod must carry a full block of ranks"
    )
    assert spec_failures(spec) == [expected]
    assert _python(spec) == [expected]


def _spec(spec: dict[str, Any]) -> TrainingTopologySpec:
    return TrainingTopologySpec.model_validate(_drop_nulls(copy.deepcopy(spec)))


def _python(spec: dict[str, Any]) -> list[str]:
    return violations(TrainingTopologySpec.model_validate(_drop_nulls(copy.deepcopy(spec))))


def test_workload_ref_is_immutable(spec_failures: Check) -> None:
    old = spec_with()
    renamed = spec_with(workloadRef={**BASE["workloadRef"], "name": "llama-70b-v2"})
    resized = spec_with(parallelism={"data": 8})
    assert spec_failures(renamed, old=old) == [
        "workloadRef is immutable: create a new TrainingTopology for another workload"
    ]
    assert spec_failures(resized, old=old) == []
    assert spec_failures(old, old=old) == []


@settings(max_examples=150, deadline=None)
@given(
    dims=st.lists(st.sampled_from([1, 2, 3, 4, 8, 16, 64, 1024, 65536]), min_size=4, max_size=4),
    gpus_per_pod=st.sampled_from([1, 2, 4, 6, 8, 64]),
)
def test_world_rules_agree_with_integer_arithmetic(
    dims: list[int], gpus_per_pod: int, spec_failures: Check
) -> None:
    tensor, pipeline, data, context = dims
    world = tensor * pipeline * data * context
    spec = spec_with(
        gpusPerPod=gpus_per_pod,
        parallelism={"tensor": tensor, "pipeline": pipeline, "data": data, "context": context},
        model=None,
    )
    failures = spec_failures(spec)
    too_many = world > MAX_PODS * gpus_per_pod
    assert any("pods:" in f for f in failures) == too_many
    assert any("multiple of gpusPerPod" in f for f in failures) == (
        not too_many and world % gpus_per_pod != 0
    )
    assert sorted(_python(spec)) == sorted(failures)
