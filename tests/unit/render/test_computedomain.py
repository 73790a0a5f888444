"""The ComputeDomain object, its channel's name and the pod template's claim (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.render.computedomain import (
    build_compute_domain,
    channel_template_name,
    claim_snippet,
    claims_channel,
    compute_domain_state,
    num_nodes_of,
)


def test_the_compute_domain_is_owned_by_the_topology_and_sized_from_the_plan() -> None:
    assert build_compute_domain(topology="llm", namespace="team", owner_uid="u1", num_nodes=6) == {
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {
            "name": "llm",
            "namespace": "team",
            "labels": {"fabricfit.dev/topology": "llm"},
            "ownerReferences": [
                {
                    "apiVersion": "fabricfit.dev/v1alpha1",
                    "kind": "TrainingTopology",
                    "name": "llm",
                    "uid": "u1",
                    "controller": True,
                }
            ],
        },
        "spec": {"numNodes": 6, "channel": {"resourceClaimTemplate": {"name": "llm-channel"}}},
    }


def test_long_names_keep_a_valid_unique_channel_template_name() -> None:
    long_a, long_b = "a" * 250, "a" * 249 + "b"
    name_a, name_b = channel_template_name(long_a), channel_template_name(long_b)
    assert len(name_a) <= 253 and len(name_b) <= 253 and name_a != name_b
    assert name_a.endswith("-channel")
    assert channel_template_name("x") == "x-channel"


def template(claims: list[Any], container_claims: list[Any]) -> dict[str, Any]:
    return {
        "spec": {
            "resourceClaims": claims,
            "containers": [
                {"name": "sidecar"},
                {"name": "train", "resources": {"claims": container_claims}},
            ],
        }
    }


CLAIM = {"name": "ch", "resourceClaimTemplateName": "llm-channel"}


@pytest.mark.parametrize(
    ("tmpl", "claimed"),
    [
        (template([CLAIM], [{"name": "ch"}]), True),
        # The pod claims it but no container uses it: the channel is not injected.
        (template([CLAIM], []), False),
        # Another template's claim.
        (template([{**CLAIM, "resourceClaimTemplateName": "other"}], [{"name": "ch"}]), False),
        ({"spec": {"containers": [{"name": "train"}]}}, False),
        ({"spec": {"resourceClaims": "garbage", "containers": "garbage"}}, False),
        ({}, False),
        (None, False),
    ],
)
def test_the_template_claims_the_channel_only_through_a_container(
    tmpl: dict[str, Any] | None, claimed: bool
) -> None:
    assert claims_channel(tmpl, "llm-channel") is claimed


def test_the_snippet_names_the_template_and_the_claim() -> None:
    text = claim_snippet("llm-channel")
    assert "resourceClaimTemplateName: llm-channel" in text and "resources.claims" in text


@pytest.mark.parametrize(
    ("obj", "state"),
    [
        ({"status": {"status": "Ready"}}, "Ready"),
        ({"status": {"status": "NotReady"}}, "NotReady"),
        ({"status": {}}, "Pending"),
        ({"status": "odd"}, "Pending"),
        ({}, "Pending"),
        (None, "Pending"),
    ],
)
def test_the_state_is_the_drivers_or_pending(obj: dict[str, Any] | None, state: str) -> None:
    assert compute_domain_state(obj) == state


def test_num_nodes_is_read_back_or_none() -> None:
    assert num_nodes_of({"spec": {"numNodes": 3}}) == 3
    assert num_nodes_of({"spec": {"numNodes": "3"}}) is None
    assert num_nodes_of(None) is None
