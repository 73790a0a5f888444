"""TopologyDetected: True naming the tiers, False with NoTopologyLabels on a flat cluster (a
Warning transition), computed once per snapshot."""

from __future__ import annotations

import asyncio

from fabricfit.api.conditions import ConditionType, Reason, Severity
from fabricfit.api.constants import LABEL_PREFIX, LABEL_RAIL_GROUP
from fabricfit.api.status import find_condition
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.reconcile import service
from fabricfit.reconcile.detected import detection_of, set_topology_condition
from fabricfit.reconcile.draft import StatusDraft
from unit.fabric.conftest import build_node
from unit.reconcile.world import JOB_PATH, World, job, topology


def test_flat_cluster_is_not_detected_and_warns() -> None:
    snapshot = build_snapshot([build_node("a"), build_node("b")], scheme="auto")
    draft = StatusDraft({}, 1)
    set_topology_condition(draft, snapshot, "auto")
    condition = find_condition(draft.conditions, ConditionType.TOPOLOGY_DETECTED)
    assert condition is not None
    assert (condition.status, condition.reason) == ("False", "NoTopologyLabels")
    assert "finds no topology tier on any of the 2 nodes" in condition.message
    (transition,) = draft.transitions
    assert transition.reason.severity == Severity.WARNING


def test_labelled_cluster_names_its_tiers() -> None:
    nodes = [build_node(f"n{i}", {LABEL_RAIL_GROUP: f"rg{i % 2}"}) for i in range(4)]
    draft = StatusDraft({}, 1)
    set_topology_condition(draft, build_snapshot(nodes, scheme="auto"), "auto")
    condition = find_condition(draft.conditions, ConditionType.TOPOLOGY_DETECTED)
    assert condition is not None and condition.reason == Reason.TIERS_FOUND
    assert condition.status == "True" and "rail_group (2 domains)" in condition.message


def test_one_detection_per_snapshot() -> None:
    snapshot = build_snapshot([build_node("a")], scheme="auto")
    assert detection_of(snapshot, "auto") is detection_of(snapshot, "auto")
    other = build_snapshot([build_node("a")], scheme="auto")
    assert detection_of(other, "auto") is not detection_of(snapshot, "auto")


def test_a_plan_on_a_flat_cluster_reports_no_efficiency() -> None:
    world = World(topology(), (JOB_PATH, job()))
    for node in world.nodes:  # the tier labels gone: every node its own island
        labels = node["metadata"]["labels"]
        node["metadata"]["labels"] = {
            k: v for k, v in labels.items() if not k.startswith(LABEL_PREFIX)
        }
    outcome = asyncio.run(service.reconcile(world.body(), world.state, world.views))
    assert outcome.decision is not None and outcome.decision.efficiency > 0.999  # looks perfect
    status = world.status()
    assert status["predicted"]["stepCommSeconds"] > 0
    assert status.get("efficiency") is None and status.get("efficiencyPercent") is None
    assert world.condition("Planned") == ("True", "Planned")
    assert world.condition("TopologyDetected") == ("False", "NoTopologyLabels")
    planned = find_condition(StatusDraft(status, 1).conditions, ConditionType.PLANNED)
    assert (
        planned is not None
        and "efficiency unknown: label scheme native finds no topology tier" in (planned.message)
    )


def test_a_plan_on_a_labelled_cluster_reports_its_efficiency() -> None:
    world = World(topology(), (JOB_PATH, job()))
    asyncio.run(service.reconcile(world.body(), world.state, world.views))
    status = world.status()
    assert status["efficiency"] > 0.99 and status["efficiencyPercent"] in ("99%", "100%")
