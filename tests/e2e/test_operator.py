"""The operator on a real control plane: every assertion reads what the cluster did.

kube-scheduler binds the pods; kwok runs them; the operator only plans, reserves, gates and
pins. Each test fences itself onto its own pool of fake GPU nodes with a nodeSelector, which
the planner honours like any workload constraint.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from fabricfit.api.models import Parallelism
from fabricfit.placement import build_layout
from fabricfit.render.status import format_seconds
from fabricfit_dev.e2e.objects import (
    RAIL_GROUP,
    TT,
    condition,
    foreign_pod,
    indexed_job,
    job_pods,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for


def test_job_lands_where_planned_with_dp_peers_in_one_rail_group(
    operator: OperatorProcess,
    core: Any,
    custom: Any,
    batch: Any,
    kubectl: list[str],
    namespace: str,
) -> None:
    nodes = make_pool(
        core, "main", rail_groups_per_spine=2, nodes_per_rail_group=16, nodes_per_rack=4
    )
    names = [n["metadata"]["name"] for n in nodes]
    # Other tenants: 6 nodes of rail group 0 fully taken, 4 more half taken.
    for i, node in enumerate(names[:10]):
        core.create_namespaced_pod(namespace, foreign_pod(f"tenant-{i}", node, 8 if i < 6 else 4))
    batch.create_namespaced_job(namespace, indexed_job("train", 8, "main"))
    custom.create_namespaced_custom_object(
        *TT[:2],
        namespace,
        TT[2],
        topology("train", "train", {"tensor": 8, "pipeline": 2, "data": 4}),
    )

    tt = wait_condition(custom, namespace, "train", "Placed", "True")
    plan = planned(tt)
    pods = wait_bound(core, namespace, "train", 8)
    assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(plan))

    rail_group = {n["metadata"]["name"]: n["metadata"]["labels"][RAIL_GROUP] for n in nodes}
    layout = build_layout(Parallelism(tensor=8, pipeline=2, data=4), 8, "tp-cp-ep-dp-pp")
    for group in layout.groups["data"]:
        groups = {rail_group[pods[rank // 8].spec.node_name] for rank in group}
        assert len(groups) == 1, f"DP group {group} spans rail groups {groups}"

    used: dict[str, int] = {}
    for pod in core.list_pod_for_all_namespaces(field_selector="status.phase=Running").items:
        for c in pod.spec.containers:
            used[pod.spec.node_name] = used.get(pod.spec.node_name, 0) + int(
                (c.resources.limits or {}).get("nvidia.com/gpu", 0)
            )
    assert all(v <= 8 for v in used.values()), used

    status = tt["status"]
    assert status["summary"] == "Placed"
    assert status["predicted"]["stepCommSeconds"] > 0
    assert 0 < status["efficiency"] <= 1
    table = subprocess.run(
        [*kubectl, "-n", namespace, "get", "tt", "train"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    header, row = table.strip().splitlines()
    assert header.split()[:5] == ["NAME", "WORKLOAD", "WORLD", "STATUS", "STEP-COMM"]
    assert row.split()[:4] == ["train", "Job/train", "64", "Placed"]
    # The column shows the human form of the prediction (status.stepComm, e.g. "136ms").
    assert (
        row.split()[4]
        == status["stepComm"]
        == format_seconds(status["predicted"]["stepCommSeconds"])
    )


def test_two_topologies_that_cannot_both_fit(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "tight", rail_groups_per_spine=1, nodes_per_rail_group=4)
    for name in ("alpha", "beta"):
        batch.create_namespaced_job(namespace, indexed_job(name, 4, "tight"))
    for name in ("alpha", "beta"):
        custom.create_namespaced_custom_object(
            *TT[:2], namespace, TT[2], topology(name, name, {"tensor": 8, "data": 4})
        )

    def one_each() -> tuple[str, str] | None:
        placed = {
            n
            for n in ("alpha", "beta")
            if (c := condition(read_topology(custom, namespace, n), "Placed"))
            and c["status"] == "True"
        }
        waiting = {
            n
            for n in ("alpha", "beta")
            if (c := condition(read_topology(custom, namespace, n), "Planned"))
            and c["status"] == "False"
        }
        return (placed.pop(), waiting.pop()) if len(placed) == 1 and len(waiting) == 1 else None

    winner, loser = wait_for(one_each, timeout_seconds=90, what="one placed, one waiting")
    waiting = condition(read_topology(custom, namespace, loser), "Planned")
    assert waiting is not None and waiting["reason"] == "InsufficientGPUs"
    assert read_topology(custom, namespace, loser)["status"]["summary"] == "Waiting"
    assert job_pods(core, namespace, loser) == {}  # still suspended: nothing scheduled

    custom.delete_namespaced_custom_object(*TT[:2], namespace, TT[2], winner)
    batch.delete_namespaced_job(winner, namespace, propagation_policy="Foreground")
    wait_condition(custom, namespace, loser, "Placed", "True", timeout=120)
    assert len(wait_bound(core, namespace, loser, 4)) == 4


def test_invalid_topologies_are_rejected_or_marked(
    operator: OperatorProcess,
    core: Any,
    custom: Any,
    batch: Any,
    kubectl: list[str],
    namespace: str,
) -> None:
    from kubernetes.client.exceptions import ApiException

    bad = topology(
        "bad-expert", "x", {"tensor": 8, "data": 3, "expert": 2}, model={"experts": 8, "topK": 2}
    )
    with pytest.raises(ApiException) as rejected:
        custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], bad)
    assert rejected.value.status == 422
    assert "expert" in rejected.value.body

    make_pool(core, "valid", rail_groups_per_spine=1, nodes_per_rail_group=2)
    batch.create_namespaced_job(namespace, indexed_job("mismatch", 3, "valid"))
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], topology("mismatch", "mismatch", {"tensor": 8, "data": 2})
    )
    tt = wait_condition(custom, namespace, "mismatch", "Planned", "False")
    assert condition(tt, "Planned")["reason"] == "InvalidSpec"  # type: ignore[index]
    assert "runs 3 pods but the spec needs 2" in condition(tt, "Planned")["message"]  # type: ignore[index]
    assert tt["status"]["summary"] == "Invalid"

    batch.create_namespaced_job(namespace, indexed_job("fine", 2, "valid"))
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], topology("fine", "fine", {"tensor": 8, "data": 2})
    )
    wait_condition(custom, namespace, "fine", "Placed", "True")
    assert operator.alive()
    events = core.list_namespaced_event(
        namespace, field_selector="involvedObject.name=mismatch"
    ).items
    assert any(e.reason == "InvalidSpec" and e.type == "Warning" for e in events)


def test_restart_between_planning_and_pinning_keeps_the_plan(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    """With a Kueue queue named, fabricfit plans and gates but leaves unsuspending to Kueue; we
    stop the operator, admit the Job by hand (as Kueue would), and start the operator again."""
    make_pool(core, "restart", rail_groups_per_spine=2, nodes_per_rail_group=4)
    batch.create_namespaced_job(namespace, indexed_job("late", 4, "restart"))
    spec = topology("late", "late", {"tensor": 8, "data": 4}, queueName="team-a")
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
    plan = planned(wait_condition(custom, namespace, "late", "Planned", "True"))
    wait_for(
        lambda: batch.read_namespaced_job("late", namespace).spec.template.spec.scheduling_gates,
        what="the Job's template to carry the gate",
    )
    job = batch.read_namespaced_job("late", namespace)
    assert job.metadata.labels["kueue.x-k8s.io/queue-name"] == "team-a"
    assert job.spec.suspend is True

    operator.stop()
    batch.patch_namespaced_job("late", namespace, {"spec": {"suspend": False}})
    gated = wait_for(
        lambda: len(p := job_pods(core, namespace, "late")) == 4 and p, what="gated pods created"
    )
    assert all(pod.spec.scheduling_gates and not pod.spec.node_name for pod in gated.values())
    operator.start()

    wait_condition(custom, namespace, "late", "Placed", "True")
    pods = wait_bound(core, namespace, "late", 4)
    for index, pod in pods.items():
        assert pod.spec.node_name == plan[index]
        required = (
            pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        )
        pins = [
            f for t in required.node_selector_terms for f in (t.match_fields or [])
            if f.key == "metadata.name"
        ]  # fmt: skip
        assert [p.values for p in pins] == [[plan[index]]] * len(required.node_selector_terms)
        assert not pod.spec.scheduling_gates


def test_cordoned_node_degrades_and_recreated_pod_moves(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "churn", rail_groups_per_spine=2, nodes_per_rail_group=3)
    batch.create_namespaced_job(namespace, indexed_job("churn", 2, "churn"))
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], topology("churn", "churn", {"tensor": 8, "data": 2})
    )
    plan = planned(wait_condition(custom, namespace, "churn", "Placed", "True"))
    victim = plan[0]

    core.patch_node(victim, {"spec": {"unschedulable": True}})
    try:
        tt = wait_condition(custom, namespace, "churn", "Degraded", "True")
        assert tt["status"]["degradedRanks"] == list(range(8))
        assert victim in condition(tt, "Degraded")["message"]  # type: ignore[index]

        old = job_pods(core, namespace, "churn")[0]
        core.delete_namespaced_pod(old.metadata.name, namespace, grace_period_seconds=0)

        def moved() -> Any:
            pods = job_pods(core, namespace, "churn")
            pod = pods.get(0)
            return (
                pod
                if pod is not None and pod.metadata.uid != old.metadata.uid and pod.spec.node_name
                else None
            )

        pod = wait_for(moved, timeout_seconds=90, what="index 0 recreated and bound")
        assert pod.spec.node_name != victim
        tt = wait_condition(custom, namespace, "churn", "Degraded", "False")
        assert planned(tt)[0] == pod.spec.node_name
        placed = wait_condition(custom, namespace, "churn", "Placed", "True")
        assert planned(placed)[0] == pod.spec.node_name
    finally:
        core.patch_node(victim, {"spec": {"unschedulable": False}})
