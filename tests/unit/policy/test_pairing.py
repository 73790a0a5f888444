"""The partner of a disaggregated deployment, read from its TrainingTopology."""

from __future__ import annotations

from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.placement.pairing import Partner
from fabricfit.policy.pairing import pairing_problems, partner_of

DECODE: dict[str, Any] = {
    "gpusPerPod": 4,
    "parallelism": {"tensor": 4, "data": 2},
    "serving": {"role": "decode", "decodeBatch": 32, "promptTokens": 1024},
}
PLAN = {"pods": [{"index": 1, "node": "b"}, {"index": 0, "node": "a"}], "gpusPerPod": 4}


def test_a_planned_partner_of_the_other_role_is_read_from_its_status() -> None:
    found = partner_of("llama-decode", DECODE, PLAN, role="prefill")
    assert found == Partner(
        name="llama-decode",
        parallelism=TrainingTopologySpec.model_validate(DECODE).parallelism,
        gpus_per_pod=4,
        rank_order="tp-cp-ep-dp-pp",
        pods=("a", "b"),
    )


def test_why_a_partner_cannot_be_one() -> None:
    assert (
        partner_of("d", DECODE, None, role="prefill")
        == "the paired TrainingTopology d has no plan yet"
    )
    assert partner_of("d", DECODE, PLAN, role="decode") == (
        "the paired TrainingTopology d is decode, not the prefill side"
    )
    training = {k: v for k, v in DECODE.items() if k != "serving"}
    assert "is training, not the decode side" in str(
        partner_of("d", training, PLAN, role="prefill")
    )
    assert "invalid spec" in str(partner_of("d", {"gpusPerPod": "x"}, PLAN, role="prefill"))


def test_a_spec_pairing_with_itself_is_a_problem() -> None:
    spec = TrainingTopologySpec.model_validate(
        {**DECODE, "serving": {**DECODE["serving"], "pairedWith": "me"}}
    )
    assert pairing_problems("me", spec) == (
        "serving.pairedWith names this TrainingTopology (me) itself",
    )
    assert pairing_problems("other", spec) == ()
    assert pairing_problems("", spec) == ()
