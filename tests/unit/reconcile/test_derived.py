"""Values derived from the nodes' facts are computed once per facts token and agree with a
fresh computation: the fingerprint, the fabric vote, the TopologyDetected condition."""

from __future__ import annotations

from fabricfit.api.conditions import ConditionType
from fabricfit.api.constants import LABEL_RAIL_GROUP
from fabricfit.api.status import find_condition
from fabricfit.fabric.snapshot import FactsMemo
from fabricfit.reconcile.derived import PerFacts
from fabricfit.reconcile.detected import set_topology_condition
from fabricfit.reconcile.draft import StatusDraft
from fabricfit.reconcile.planning import capacity_fingerprint
from unit.fabric.conftest import build_node, build_pod

NODES = [build_node(f"n{i}", {LABEL_RAIL_GROUP: f"rg{i % 2}"}) for i in range(4)]


def test_a_value_is_computed_once_per_facts_token() -> None:
    memo, per_facts, calls = FactsMemo(trust_identity=True), PerFacts(), []
    first = memo.build_snapshot(NODES)
    busy = memo.build_snapshot(NODES, [build_pod("n0", "8")])
    for snapshot in (first, busy, first):
        assert per_facts.get(snapshot, "k", lambda: calls.append(1) or len(calls)) == 1
    changed = memo.build_snapshot([*NODES[:3], build_node("n3", gpus="4")])
    assert per_facts.get(changed, "k", lambda: calls.append(1) or len(calls)) == 2


def test_the_cached_fingerprint_equals_the_fresh_one() -> None:
    memo, per_facts = FactsMemo(trust_identity=True), PerFacts()
    for pods in ([], [build_pod("n0", "8")], [build_pod("n1", "2")], []):
        snapshot = memo.build_snapshot(NODES, pods)
        cached = capacity_fingerprint(snapshot, {"n2": 4}, "req", per_facts=per_facts)
        assert cached == capacity_fingerprint(snapshot, {"n2": 4}, "req")
    idle = capacity_fingerprint(memo.build_snapshot(NODES), {}, "req", per_facts=per_facts)
    busy = memo.build_snapshot(NODES, [build_pod("n0", "8")])
    assert capacity_fingerprint(busy, {}, "req", per_facts=per_facts) != idle


def test_the_cached_condition_reads_as_the_fresh_one() -> None:
    memo, per_facts = FactsMemo(trust_identity=True), PerFacts()
    for pods in ([], [build_pod("n0", "8")]):
        snapshot = memo.build_snapshot(NODES, pods, scheme="auto")
        cached, fresh = StatusDraft({}, 1), StatusDraft({}, 1)
        set_topology_condition(cached, snapshot, "auto", per_facts)
        set_topology_condition(fresh, snapshot, "auto")
        kind = ConditionType.TOPOLOGY_DETECTED
        one, other = (find_condition(d.conditions, kind) for d in (cached, fresh))
        assert one is not None and other is not None
        assert (one.reason, one.message) == (other.reason, other.message)
