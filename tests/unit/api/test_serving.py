"""``spec.serving`` and the attention shape: defaults, bounds, numbers that are numbers, and
what a serving spec reports as assumed."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from fabricfit.api.models import ModelShape, TrainingTopologySpec
from fabricfit.api.serving import ServingSpec

SERVING: dict[str, Any] = {"decodeBatch": 64, "promptTokens": 2048}


def test_serving_defaults_and_camel_case() -> None:
    spec = TrainingTopologySpec.model_validate({"serving": SERVING})
    assert spec.serving == ServingSpec(decode_batch=64, prompt_tokens=2048)
    serving = spec.serving
    assert (serving.role, serving.prefill_batch, serving.spread) == ("replica", 1, "None")
    assert serving.paired_with is None and serving.targets is None
    assert TrainingTopologySpec().serving is None  # training specs are unchanged


@pytest.mark.parametrize(
    "serving",
    [
        {"promptTokens": 10},  # decodeBatch is required
        {**SERVING, "role": "router"},
        {**SERVING, "spread": "Zone"},
        {**SERVING, "decodeBatch": 0},
        {**SERVING, "pairedWith": "Not_A_Name"},
        {**SERVING, "targets": {"timePerOutputTokenSeconds": "0.05"}},  # a string, not a number
        {**SERVING, "targets": {"timePerOutputTokenSeconds": 0}},
        {**SERVING, "targets": {"timeToFirstTokenSeconds": True}},
        {**SERVING, "extra": 1},
    ],
)
def test_bad_serving_fields_are_refused(serving: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        TrainingTopologySpec.model_validate({"serving": serving})


def test_the_attention_shape_resolves_from_what_is_given() -> None:
    assert (ModelShape().head_dimension, ModelShape().key_value_heads) == (128, 32)
    gqa = ModelShape(hidden_size=8192, attention_heads=64, kv_heads=8)
    assert (gqa.head_dimension, gqa.key_value_heads) == (128, 8)
    mha = ModelShape(hidden_size=4096, attention_heads=16)
    assert (mha.head_dimension, mha.key_value_heads) == (256, 16)
    assert ModelShape(hidden_size=64).head_dimension == 64
    assert ModelShape(head_dim=96, kv_heads=4).head_dimension == 96


def test_a_serving_spec_reports_the_figures_a_token_reads() -> None:
    given = {"hiddenSize": 8192, "layers": 80, "attentionHeads": 64}
    spec = TrainingTopologySpec.model_validate({"serving": SERVING, "model": given})
    assert spec.defaulted() == {
        "gpusPerPod": 8,
        "model.bytesPerElement": 2,
        "model.experts": 0,
        "model.topK": 0,
        "model.kvHeads": 64,  # multi-head attention assumed: kvHeads = attentionHeads
    }
    bare = TrainingTopologySpec.model_validate({"serving": SERVING, "gpusPerPod": 8})
    assert bare.defaulted()["model"] == {
        "hiddenSize": 4096,
        "layers": 32,
        "bytesPerElement": 2,
        "experts": 0,
        "topK": 0,
        "kvHeads": 32,
        "headDim": 128,
    }


def test_a_training_spec_reports_what_it_always_did() -> None:
    assert TrainingTopologySpec().defaulted()["model"] == {
        "parameters": 7_000_000_000,
        "hiddenSize": 4096,
        "layers": 32,
        "sequenceLength": 4096,
        "microBatchSize": 1,
        "microBatches": 8,
        "bytesPerElement": 2,
        "experts": 0,
        "topK": 0,
        "zeroStage": 1,
    }
