"""A served model through one reconcile: per-phase prediction in status, the LatencyTarget
condition, and the partner of a disaggregated deployment read from its recorded plan."""

from __future__ import annotations

import asyncio
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.reconcile import service
from fabricfit.reconcile.context import Views
from fabricfit.reconcile.inventory import holding_of
from fabricfit.reconcile.service import Outcome
from unit.reconcile.world import JOB_PATH, NS, World, job, topology

SERVING: dict[str, Any] = {"decodeBatch": 64, "promptTokens": 2048}
MODEL = {"hiddenSize": 8192, "layers": 80, "attentionHeads": 64, "kvHeads": 8}


def reconcile(world: World) -> Outcome:
    return asyncio.run(service.reconcile(world.body(), world.state, world.views))


def served(**serving: Any) -> dict[str, Any]:
    return topology(serving={**SERVING, **serving}, model=MODEL)


def test_status_carries_the_phases_and_a_target_exceeded_is_a_warning() -> None:
    world = World(served(targets={"timePerOutputTokenSeconds": 0.0001}), (JOB_PATH, job()))
    outcome = reconcile(world)
    predicted = world.status()["predicted"]
    assert predicted["decodeTokenCommSeconds"] > 0 and predicted["prefillCommSeconds"] > 0
    assert predicted.get("kvTransferSeconds") is None
    assert world.condition("LatencyTarget") == ("False", "CommunicationExceedsTarget")
    assert Reason.COMMUNICATION_EXCEEDS_TARGET in [t.reason for t in outcome.transitions]
    planned = next(c for c in world.status()["conditions"] if c["type"] == "Planned")
    assert planned["status"] == "True" and "per output token" in planned["message"]


def test_a_target_met_and_no_target_no_condition() -> None:
    met = World(served(targets={"timePerOutputTokenSeconds": 1.0}), (JOB_PATH, job()))
    reconcile(met)
    assert met.condition("LatencyTarget") == ("True", "CommunicationWithinTarget")
    plain = World(served(), (JOB_PATH, job()))
    reconcile(plain)
    assert plain.condition("LatencyTarget") is None
    training = World(topology(), (JOB_PATH, job()))
    reconcile(training)
    assert "decodeTokenCommSeconds" not in training.status()["predicted"]


def with_partner(world: World, partner: dict[str, Any]) -> None:
    """Let kopf's index of TrainingTopologies hold the partner too."""
    own = world.views

    def views() -> Views:
        found = own()
        key = (NS, partner["metadata"]["name"])
        return Views(
            nodes=found.nodes,
            pods=found.pods,
            topologies={**found.topologies, key: holding_of(partner)},
            kueue=found.kueue,
        )

    world.views = views  # type: ignore[method-assign]


def prefill(status: dict[str, Any] | None) -> dict[str, Any]:
    body = served(role="prefill", pairedWith="llama")
    body["metadata"] = {"namespace": NS, "name": "pre", "generation": 1}
    body["spec"]["workloadRef"]["name"] = "pre"
    if status is not None:
        body["status"] = status
    return body


def test_the_side_planned_second_prices_the_kv_transfer_from_its_partners_plan() -> None:
    world = World(served(role="decode", pairedWith="pre"), (JOB_PATH, job()))
    nodes = [n["metadata"]["name"] for n in world.nodes]
    plan = {"pods": [{"index": 0, "node": nodes[0]}, {"index": 1, "node": nodes[1]}],
            "reservation": [{"node": nodes[0], "gpus": 8}, {"node": nodes[1], "gpus": 8}],
            "gpusPerPod": 8}  # fmt: skip
    with_partner(world, prefill(plan))
    reconcile(world)
    status = world.status()
    assert status["predicted"]["kvTransferSeconds"] > 0
    assert status["predicted"].get("prefillCommSeconds") is None
    assert not {p["node"] for p in status["pods"]} & {nodes[0], nodes[1]}  # its GPUs are held


def test_a_partner_not_planned_yet_is_said_and_no_transfer_priced() -> None:
    world = World(served(role="decode", pairedWith="pre"), (JOB_PATH, job()))
    with_partner(world, prefill(None))
    reconcile(world)
    status = world.status()
    assert status["predicted"].get("kvTransferSeconds") is None
    assert any("pre has no plan yet" in r for r in status["reasons"])


def test_a_spec_paired_with_itself_is_invalid() -> None:
    world = World(served(role="decode", pairedWith="llama"), (JOB_PATH, job()))
    reconcile(world)
    assert world.condition("Planned") == ("False", "InvalidSpec")
