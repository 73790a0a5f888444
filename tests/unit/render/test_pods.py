"""Pin and ungate JSON Patches, checked as exact op lists and by applying them (RFC 6902)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.constants import SCHEDULING_GATE
from fabricfit.render.pods import (
    build_pin_patch,
    build_ungate_patch,
    is_gated,
    node_requirement,
    planned_node_of,
    stuck_on,
)
from fabricfit_dev.jsonpatch import PatchError, apply_patch

OURS = {"name": SCHEDULING_GATE}
KUEUE = {"name": "kueue.x-k8s.io/topology"}
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
TERMS = f"/spec/affinity/nodeAffinity/{REQ}/nodeSelectorTerms"
PIN = {"key": "metadata.name", "operator": "In", "values": ["n1"]}
ZONE = {"key": "zone", "operator": "In", "values": ["a"]}


def pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p-0", "labels": {"app": "x"}}, "spec": spec}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {REQ: {"nodeSelectorTerms": list(terms)}}}


GATE_OPS = [
    {"op": "test", "path": "/spec/schedulingGates/0/name", "value": SCHEDULING_GATE},
    {"op": "remove", "path": "/spec/schedulingGates/0"},
]

CASES: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = [
    (
        "no affinity: create it under spec",
        pod({"schedulingGates": [OURS]}),
        [
            GATE_OPS[0],
            {
                "op": "add",
                "path": "/spec/affinity",
                "value": {"nodeAffinity": {REQ: {"nodeSelectorTerms": [{"matchFields": [PIN]}]}}},
            },
            GATE_OPS[1],
        ],
    ),
    (
        "pod anti-affinity only: add nodeAffinity beside it",
        pod({"schedulingGates": [OURS], "affinity": {"podAntiAffinity": {}}}),
        [
            GATE_OPS[0],
            {
                "op": "add",
                "path": "/spec/affinity/nodeAffinity",
                "value": {REQ: {"nodeSelectorTerms": [{"matchFields": [PIN]}]}},
            },
            GATE_OPS[1],
        ],
    ),
    (
        "preferred node affinity only: add the required part",
        pod(
            {
                "schedulingGates": [OURS],
                "affinity": {
                    "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}
                },
            }
        ),
        [
            GATE_OPS[0],
            {
                "op": "add",
                "path": f"/spec/affinity/nodeAffinity/{REQ}",
                "value": {"nodeSelectorTerms": [{"matchFields": [PIN]}]},
            },
            GATE_OPS[1],
        ],
    ),
    (
        "two required terms: narrow each; our gate second",
        pod(
            {
                "schedulingGates": [KUEUE, OURS],
                "affinity": required({"matchExpressions": [ZONE]}, {"matchFields": [ZONE]}),
            }
        ),
        [
            {"op": "test", "path": "/spec/schedulingGates/1/name", "value": SCHEDULING_GATE},
            {"op": "add", "path": f"{TERMS}/0/matchFields", "value": [PIN]},
            {"op": "add", "path": f"{TERMS}/1/matchFields/-", "value": PIN},
            {"op": "remove", "path": "/spec/schedulingGates/1"},
        ],
    ),
    (
        "already pinned to the node: only ungate",
        pod({"schedulingGates": [OURS], "affinity": required({"matchFields": [PIN]})}),
        GATE_OPS,
    ),
    (
        "not gated: affinity only (the API server decides whether it may change)",
        pod({}),
        [
            {
                "op": "add",
                "path": "/spec/affinity",
                "value": {"nodeAffinity": {REQ: {"nodeSelectorTerms": [{"matchFields": [PIN]}]}}},
            }
        ],
    ),
]


@pytest.mark.parametrize(("name", "before", "ops"), CASES, ids=[c[0] for c in CASES])
def test_pin_patch_ops(name: str, before: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    assert build_pin_patch(before, "n1") == ops
    after = apply_patch(before, ops)
    assert planned_node_of(after) == "n1"
    assert not is_gated(after)


def test_pin_patch_refuses_to_repin_to_another_node() -> None:
    pinned = pod({"schedulingGates": [OURS], "affinity": required({"matchFields": [PIN]})})
    with pytest.raises(ValueError, match="already pinned to node 'n1'"):
        build_pin_patch(pinned, "n2")


def test_pin_patch_fails_when_gates_changed_meanwhile() -> None:
    before = pod({"schedulingGates": [KUEUE, OURS]})
    ops = build_pin_patch(before, "n1")
    # Kueue removed its gate after we read the pod: index 1 no longer holds ours.
    now = pod({"schedulingGates": [OURS]})
    with pytest.raises(PatchError):
        apply_patch(now, ops)
    # And if another gate moved into our index, the test op refuses too.
    with pytest.raises(PatchError, match="test failed"):
        apply_patch(pod({"schedulingGates": [OURS, KUEUE]}), ops)


def test_ungate_patch() -> None:
    before = pod({"schedulingGates": [KUEUE, OURS, {"name": "x/y"}]})
    ops = build_ungate_patch(before)
    assert ops == [
        {"op": "test", "path": "/spec/schedulingGates/1/name", "value": SCHEDULING_GATE},
        {"op": "remove", "path": "/spec/schedulingGates/1"},
    ]
    assert apply_patch(before, ops)["spec"]["schedulingGates"] == [KUEUE, {"name": "x/y"}]
    assert build_ungate_patch(pod({"schedulingGates": [KUEUE]})) == []
    assert build_ungate_patch({}) == []


@pytest.mark.parametrize(
    ("spec", "node"),
    [
        ({}, None),
        ({"affinity": required()}, None),
        ({"affinity": required({"matchFields": [PIN]})}, "n1"),
        ({"affinity": required({"matchFields": [PIN]}, {"matchExpressions": [ZONE]})}, None),
        ({"affinity": required({"matchFields": [PIN]}, {"matchFields": [ZONE, PIN]})}, "n1"),
        ({"affinity": required({"matchFields": [PIN, node_requirement("n2")]})}, None),
        ({"affinity": required({"matchFields": [{**PIN, "operator": "NotIn"}]})}, None),
        ({"affinity": required({"matchFields": [{**PIN, "values": ["n1", "n2"]}]})}, None),
        ({"affinity": {"nodeAffinity": None}}, None),
    ],
)
def test_planned_node_of(spec: dict[str, Any], node: str | None) -> None:
    assert planned_node_of(pod(spec)) == node


def test_is_gated() -> None:
    assert is_gated(pod({"schedulingGates": [KUEUE, OURS]}))
    assert not is_gated(pod({"schedulingGates": [KUEUE]}))
    assert not is_gated(pod({"schedulingGates": None}))
    assert not is_gated({})


UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}


@pytest.mark.parametrize(
    ("spec", "status", "meta", "node"),
    [
        ({"affinity": required({"matchFields": [PIN]})}, [UNSCHEDULABLE], {}, "n1"),
        # still gated: fabricfit pins it itself, it is not stuck
        ({"affinity": required({"matchFields": [PIN]}), "schedulingGates": [OURS]},
         [UNSCHEDULABLE], {}, None),
        # another gate only (a user's): kube-scheduler has not tried it, so no such condition
        ({"affinity": required({"matchFields": [PIN]}), "schedulingGates": [KUEUE]}, [], {}, None),
        # bound after all
        ({"affinity": required({"matchFields": [PIN]}), "nodeName": "n1"}, [UNSCHEDULABLE], {},
         None),
        # not pinned by fabricfit
        ({"affinity": required({"matchExpressions": [ZONE]})}, [UNSCHEDULABLE], {}, None),
        # being deleted
        ({"affinity": required({"matchFields": [PIN]})}, [UNSCHEDULABLE],
         {"deletionTimestamp": "2026-01-01T00:00:00Z"}, None),
        # gated by the scheduler's own view: SchedulingGated is not Unschedulable
        ({"affinity": required({"matchFields": [PIN]})},
         [{**UNSCHEDULABLE, "reason": "SchedulingGated"}], {}, None),
        ({"affinity": required({"matchFields": [PIN]})}, [{**UNSCHEDULABLE, "status": "True"}],
         {}, None),
    ],
)  # fmt: skip
def test_stuck_on(
    spec: dict[str, Any], status: list[Any], meta: dict[str, Any], node: str | None
) -> None:
    stuck = pod(spec)
    stuck["metadata"].update(meta)
    stuck["status"] = {"phase": "Pending", "conditions": status}
    assert stuck_on(stuck) == node


# --- invariants over arbitrary pods --------------------------------------------------------

requirements = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["zone", "rack", "metadata.name"]),
        "operator": st.sampled_from(["In", "NotIn", "Exists"]),
        "values": st.lists(st.sampled_from(["a", "b", "n9"]), max_size=2),
    }
)
terms = st.fixed_dictionaries(
    {},
    optional={
        "matchExpressions": st.lists(requirements, max_size=2),
        "matchFields": st.lists(requirements, max_size=2),
    },
)
other_gates = st.lists(st.sampled_from([KUEUE, {"name": "a/b"}, {"name": "c/d"}]), max_size=3)


@st.composite
def gated_pods(draw: st.DrawFn) -> dict[str, Any]:
    gates = draw(other_gates)
    gates.insert(draw(st.integers(0, len(gates))), OURS)
    spec: dict[str, Any] = {"schedulingGates": gates, "containers": [{"name": "c"}]}
    shape = draw(st.sampled_from(["none", "empty-affinity", "preferred", "terms"]))
    if shape == "empty-affinity":
        spec["affinity"] = {}
    elif shape == "preferred":
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    elif shape == "terms":
        spec["affinity"] = required(*draw(st.lists(terms, min_size=1, max_size=3)))
    return pod(spec)


@given(gated_pods())
def test_pinning_narrows_every_term_and_removes_only_our_gate(before: dict[str, Any]) -> None:
    original = copy.deepcopy(before)
    if planned_node_of(before) not in (None, "n1"):  # the user pinned it elsewhere already
        with pytest.raises(ValueError, match="already pinned"):
            build_pin_patch(before, "n1")
        return
    after = apply_patch(before, build_pin_patch(before, "n1"))
    assert before == original  # the builder does not mutate its input
    assert not is_gated(after)
    assert after["spec"]["schedulingGates"] == [
        g for g in original["spec"]["schedulingGates"] if g != OURS
    ]
    new_terms = after["spec"]["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"]
    assert all(PIN in t["matchFields"] for t in new_terms)
    old_terms = (original["spec"].get("affinity", {}).get("nodeAffinity", {}).get(REQ, {})).get(
        "nodeSelectorTerms", []
    )
    if old_terms:  # narrowed, never widened: same terms, each only gained requirements
        assert len(new_terms) == len(old_terms)
        for old, new in zip(old_terms, new_terms, strict=True):
            assert new.get("matchExpressions") == old.get("matchExpressions")
            assert new["matchFields"][: len(old.get("matchFields", []))] == old.get(
                "matchFields", []
            )
    assert after["spec"]["containers"] == original["spec"]["containers"]
    assert after["metadata"] == original["metadata"]


def test_affinity_edits_are_guarded_by_the_resource_version_read() -> None:
    before = pod({"schedulingGates": [OURS]})
    before["metadata"]["resourceVersion"] = "42"
    ops = build_pin_patch(before, "n1")
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
    assert planned_node_of(apply_patch(before, ops)) == "n1"
    # Someone added a node affinity meanwhile: our "add /spec/affinity" must not replace it.
    changed = copy.deepcopy(before)
    changed["metadata"]["resourceVersion"] = "43"
    changed["spec"]["affinity"] = required({"matchExpressions": [ZONE]})
    with pytest.raises(PatchError, match="test failed"):
        apply_patch(changed, ops)
    # Ungating alone needs no version guard: the gate-name test is enough.
    pinned = {
        **before,
        "spec": {"schedulingGates": [OURS], "affinity": required({"matchFields": [PIN]})},
    }
    assert build_pin_patch(pinned, "n1") == GATE_OPS
