"""GPUs per pod from the pod template's resource claims: v1 and v1beta1 requests, shared
claims, prioritized alternatives, and what cannot be known (a problem, never a guess)."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.fabric.podclaims import pod_claim_gpus


def template(*entries: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"resourceClaims": list(entries), "containers": [{"name": "c"}]}}


def claim_template(*requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "ResourceClaimTemplate",
        "spec": {"spec": {"devices": {"requests": list(requests)}}},
    }


def exactly(
    count: Any = None, device_class: str = "gpu.nvidia.com", **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": device_class, **extra}
    if count is not None:
        body["count"] = count
    return {"name": "gpus", "exactly": body}


TEMPLATE = {"name": "gpus", "resourceClaimTemplateName": "t"}


def test_count_of_gpu_requests_adds_up_and_other_classes_do_not_count() -> None:
    objects = {
        ("ResourceClaimTemplate", "t"): claim_template(
            exactly(4), exactly(2), exactly(2, "dranet.net"), exactly()
        )
    }
    found = pod_claim_gpus(template(TEMPLATE), objects)
    assert (found.gpus, found.sources, found.problems) == (7, ("ResourceClaimTemplate/t",), ())


def test_v1beta1_requests_and_named_claims_are_read() -> None:
    beta = {"name": "g", "deviceClassName": "gpu.nvidia.com", "count": 8}
    claim = {"kind": "ResourceClaim", "spec": {"devices": {"requests": [beta]}}}
    found = pod_claim_gpus(
        template({"name": "gpus", "resourceClaimName": "shared"}),
        {("ResourceClaim", "shared"): claim},
    )
    assert (found.gpus, found.sources) == (8, ("ResourceClaim/shared",))


def test_alternatives_of_one_count_are_that_count() -> None:
    request = {"name": "g", "firstAvailable": [exactly(4)["exactly"], exactly(4)["exactly"]]}
    found = pod_claim_gpus(
        template(TEMPLATE), {("ResourceClaimTemplate", "t"): claim_template(request)}
    )
    assert (found.gpus, found.problems) == (4, ())


@pytest.mark.parametrize(
    ("request_", "fragment"),
    [
        (exactly(allocationMode="All"), "allocationMode All takes every GPU"),
        (exactly(allocationMode="Most"), "is not ExactCount or All"),
        (exactly(0), "is not a whole number"),
        (exactly("8"), "is not a whole number"),
        (
            {"name": "g", "firstAvailable": [exactly(8)["exactly"], exactly(4)["exactly"]]},
            "different numbers",
        ),
    ],
)
def test_what_cannot_be_known_is_a_problem(request_: dict[str, Any], fragment: str) -> None:
    found = pod_claim_gpus(
        template(TEMPLATE), {("ResourceClaimTemplate", "t"): claim_template(request_)}
    )
    assert any(fragment in p for p in found.problems), found.problems


def test_a_missing_template_is_kept_apart_and_no_claims_is_nothing() -> None:
    missing = pod_claim_gpus(template(TEMPLATE), {})
    assert (missing.missing, missing.problems) == (("ResourceClaimTemplate 't' is not found",), ())
    empty = pod_claim_gpus({"spec": {"containers": []}}, {})
    assert (empty.gpus, empty.uses_claims, empty.problems) == (0, False, ())
