"""Node churn under placed jobs while another job is being placed.

Nodes of placed jobs go NotReady (kwok stops managing the node and its Ready condition is set
False through the status subresource), get cordoned, or are deleted, while a new job is being
planned. ``Degraded`` must name exactly the ranks on those nodes; the new job must avoid them;
recreated pods must land on healthy nodes; and no GPU is double-booked on the way. Afterwards the
nodes come back (re-added, managed again, uncordoned).
"""

from __future__ import annotations

import copy
from typing import Any

from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.e2e.objects import (
    TT,
    condition,
    indexed_job,
    job_pods,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.e2e.reliability import gpus_in_use
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

KWOK = fakenodes.KWOK_ANNOTATION


def ranks(*indexes: int, gpus: int = 8) -> list[int]:
    return [r for i in sorted(indexes) for r in range(i * gpus, (i + 1) * gpus)]


def make_not_ready(core: Any, node: str) -> None:
    core.patch_node(node, {"metadata": {"annotations": {KWOK: None}}})  # kwok lets go of it
    core.patch_node_status(
        node,
        {"status": {"conditions": [
            {"type": "Ready", "status": "False", "reason": "ChurnTest", "message": "e2e churn"}
        ]}},
    )  # fmt: skip


def replace_pods(core: Any, ns: str, job: str, indexes: list[int]) -> dict[int, str]:
    """Delete the pods of ``indexes``; wait until the Job recreated them and they are bound."""
    old = job_pods(core, ns, job)
    uids = {old[i].metadata.uid for i in indexes}
    for i in indexes:
        core.delete_namespaced_pod(old[i].metadata.name, ns, grace_period_seconds=0)

    def rebound() -> dict[int, str] | None:
        pods = job_pods(core, ns, job)
        fresh = {i: pods[i] for i in indexes if i in pods and pods[i].metadata.uid not in uids}
        if len(fresh) == len(indexes) and all(p.spec.node_name for p in fresh.values()):
            return {i: p.spec.node_name for i, p in fresh.items()}
        return None

    return wait_for(rebound, 120, what=f"pods {indexes} of {job} recreated and bound")


def test_churn_degrades_the_right_ranks_and_moves_recreated_pods(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    manifests = make_pool(core, "churnpool", nodes_per_rail_group=6)
    by_name = {m["metadata"]["name"]: m for m in manifests}
    for job, pods in (("alpha", 3), ("beta", 2)):
        batch.create_namespaced_job(namespace, indexed_job(job, pods, "churnpool"))
        custom.create_namespaced_custom_object(
            *TT[:2], namespace, TT[2], topology(job, job, {"tensor": 8, "data": pods})
        )
    alpha = planned(wait_condition(custom, namespace, "alpha", "Placed", "True"))
    beta = planned(wait_condition(custom, namespace, "beta", "Placed", "True"))
    not_ready, cordoned, deleted = alpha[0], beta[1], alpha[2]

    # A third job is being placed while the churn happens.
    batch.create_namespaced_job(namespace, indexed_job("gamma", 2, "churnpool"))
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], topology("gamma", "gamma", {"tensor": 8, "data": 2})
    )
    try:
        make_not_ready(core, not_ready)
        core.patch_node(cordoned, {"spec": {"unschedulable": True}})
        core.delete_node(deleted)
        bad = {not_ready, cordoned, deleted}

        def degraded_as_expected(name: str, want: list[int]) -> dict[str, Any] | None:
            tt = read_topology(custom, namespace, name)
            c = condition(tt, "Degraded")
            ok = c is not None and c["status"] == "True"
            return tt if ok and tt["status"].get("degradedRanks") == want else None

        tt = wait_for(lambda: degraded_as_expected("alpha", ranks(0, 2)), 90, what="alpha")
        message = condition(tt, "Degraded")["message"]  # type: ignore[index]
        assert not_ready in message and deleted in message and alpha[1] not in message, message
        tt = wait_for(lambda: degraded_as_expected("beta", ranks(1)), 90, what="beta Degraded")
        assert cordoned in condition(tt, "Degraded")["message"]  # type: ignore[index]

        gamma = planned(wait_condition(custom, namespace, "gamma", "Placed", "True", 120))
        assert not set(gamma) & bad, f"gamma planned onto churned nodes {set(gamma) & bad}"

        moved = replace_pods(core, namespace, "alpha", [0, 2])
        assert not set(moved.values()) & bad, moved
        moved_beta = replace_pods(core, namespace, "beta", [1])
        assert not set(moved_beta.values()) & bad, moved_beta
        for name, count in (("alpha", 3), ("beta", 2), ("gamma", 2)):
            tt = wait_condition(custom, namespace, name, "Degraded", "False", 120)
            tt = wait_condition(custom, namespace, name, "Placed", "True", 120)
            pods = wait_bound(core, namespace, name, count)
            assert [pods[i].spec.node_name for i in sorted(pods)] == planned(tt)
            assert tt["status"]["degradedRanks"] == []
        used = gpus_in_use(core, set(by_name))
        assert all(v <= 8 for v in used.values()), f"GPUs double-booked: {used}"
        assert operator.alive()
    finally:
        core.patch_node(cordoned, {"spec": {"unschedulable": False}})
        core.patch_node(not_ready, {"metadata": {"annotations": {KWOK: "fake"}}})
        fakenodes.create_nodes(core, [copy.deepcopy(by_name[deleted])])
        fakenodes.wait_ready(core, [not_ready, deleted, cordoned])
