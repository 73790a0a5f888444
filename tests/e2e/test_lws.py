"""A LeaderWorkerSet with its real controller, in ``pinned`` mode: the LWS controller creates
the leader StatefulSet and its pod, the leader's workers, fabricfit pins each one, and every pod
(numbered group index * size + worker index) is bound to its planned node. And in ``kueue-tas``
mode with the real Kueue: Kueue builds a queued LWS's Workloads from its templates only at
creation, so fabricfit says what to create it with instead of patching it; created so, Kueue
TAS places its groups inside the domain fabricfit asked for.

LWS has no suspend flag, so in pinned mode its templates carry the ``fabricfit.dev/placement``
scheduling gate from the start, as plain Pods do.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fabricfit_dev.e2e import kueue
from fabricfit_dev.e2e.lws import LWS, bound_pods, leader_worker_set, live_pods
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    TT,
    condition,
    foreign_pod,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_condition,
)
from fabricfit_dev.memapi import merge
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

pytestmark = pytest.mark.controllers("lws")


def test_lws_pods_made_by_the_real_controller_land_where_planned(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    make_pool(core, "lws", rail_groups_per_spine=2, nodes_per_rail_group=4)
    custom.create_namespaced_custom_object(
        *LWS[:2], namespace, LWS[2], leader_worker_set("serve", 2, 3, pool="lws")
    )
    spec = topology("serve", "", {"tensor": 8, "pipeline": 3, "data": 2})
    spec["spec"]["workloadRef"] = {"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                   "kind": "LeaderWorkerSet", "name": "serve"}  # fmt: skip
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)

    plan = planned(wait_condition(custom, namespace, "serve", "Placed", "True", timeout=120))

    def bound() -> dict[int, Any] | None:
        return bound_pods(core, namespace, "serve", 2, 3)

    pods = wait_for(bound, timeout_seconds=90, what="the six LWS pods bound")
    assert {rank: p.spec.node_name for rank, p in pods.items()} == dict(enumerate(plan))
    assert all(not p.spec.scheduling_gates for p in pods.values())
    # The real controller made them: leaders belong to the LWS's StatefulSet, workers to theirs.
    owners = {p.metadata.owner_references[0].kind for p in pods.values()}
    assert owners == {"StatefulSet"}


def hold(custom: Any, cluster_queue: str, policy: str | None) -> None:
    """Set the ClusterQueue's stopPolicy (Hold: Kueue admits nothing new; None: it resumes)."""
    custom.patch_cluster_custom_object(
        kueue.GROUP, kueue.VERSION, "clusterqueues", cluster_queue, {"spec": {"stopPolicy": policy}}
    )


@pytest.mark.controllers("kueue", "lws")
def test_a_queued_lws_in_kueue_tas_mode_is_created_with_fabricfits_annotations(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    # Two rail groups of four 8-GPU nodes; another tenant holds a node of the first, so only
    # the second holds both groups (2 x 2 pods) and fabricfit requires one rail group.
    nodes = make_pool(core, "lwstas", rail_groups_per_spine=2, nodes_per_rail_group=4,
                      nodes_per_rack=2, nvlink_domain_nodes=2)  # fmt: skip
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    busy = nodes[0]["metadata"]["name"]
    core.create_namespaced_pod(namespace, foreign_pod("tenant", busy, 8))
    pool = {POOL_LABEL: "lwstas"}
    with kueue.queues(custom, namespace, namespace, pool, gpus=64) as queue:
        spec = topology("tas", "", {"tensor": 8, "data": 4}, queueName=queue,
                        placement={"mode": "kueue-tas"})  # fmt: skip
        spec["spec"]["workloadRef"] = {"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                       "kind": "LeaderWorkerSet", "name": "tas"}  # fmt: skip
        custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
        wait_condition(custom, namespace, "tas", "Planned", "True")
        # Created without them first: fabricfit does not patch it, and says what it lacks. (The
        # queue is held meanwhile, so Kueue does not start this first one: its pods would take
        # the GPUs fabricfit's plan is about.)
        hold(custom, queue, "Hold")
        body = leader_worker_set("tas", 2, 2, pool="lwstas", gated=False, queue=queue)
        custom.create_namespaced_custom_object(*LWS[:2], namespace, LWS[2], body)

        def missing() -> str | None:
            found = condition(read_topology(custom, namespace, "tas"), "Placed")
            reason = found["reason"] if found is not None else None
            return found["message"] if reason == "KueueAnnotationsMissing" else None

        message = wait_for(missing, what="fabricfit to say what the LWS lacks")
        wanted = json.loads(message.split("merged in: ", 1)[1].rsplit(" (or use", 1)[0])
        first = custom.get_namespaced_custom_object(*LWS[:2], namespace, LWS[2], "tas")
        assert first["metadata"]["generation"] == 1  # never patched
        # Created again as told: Kueue's Workloads carry the topology request from the start.
        custom.delete_namespaced_custom_object(*LWS[:2], namespace, LWS[2], "tas")
        wait_for(lambda: not live_pods(core, namespace, "tas", 2),
                 what="the first LWS's pods to go")  # fmt: skip
        hold(custom, queue, None)
        custom.create_namespaced_custom_object(*LWS[:2], namespace, LWS[2], merge(body, wanted))

        pods = wait_for(
            lambda: bound_pods(core, namespace, "tas", 2, 2),
            timeout_seconds=120,
            what="the LWS's 4 pods bound by Kueue TAS",
        )

    templates = wanted["spec"]["leaderWorkerTemplate"]
    annotations = templates["workerTemplate"]["metadata"]["annotations"]
    level = annotations["kueue.x-k8s.io/podset-required-topology"]
    assert level == kueue.NATIVE + "rail-group"
    assert (
        templates["leaderTemplate"]["metadata"]["annotations"]["kueue.x-k8s.io/podset-group-name"]
        == annotations["kueue.x-k8s.io/podset-group-name"]
    )
    placed = {rank: p.spec.node_name for rank, p in pods.items()}
    assert busy not in placed.values()
    # Kueue kept each group's leader and worker in one rail group, as fabricfit required. (Kueue
    # places each group's Workload on its own, so the two groups may take different rail
    # groups: only admission-check mode places a LeaderWorkerSet as a whole.)
    for group in (0, 1):
        pair = (placed[2 * group], placed[2 * group + 1])
        domains = {kueue.domain_of(labels[node], level) for node in pair}
        assert len(domains) == 1, f"group {group} split across rail groups: {placed}"
    assert all(p.metadata.labels["fabricfit.dev/topology"] == "tas" for p in pods.values())
