"""``admission-check`` mode with a LeaderWorkerSet and its real controllers: Kueue v0.19 makes
one Workload per group (owned by the LeaderWorkerSet, numbered by its component index) and
gates every pod the LWS controller creates; fabricfit plans the whole LeaderWorkerSet only once
Kueue has reserved quota for both groups, sets both checks Ready with podSetUpdates, Kueue
admits each group and lifts its gate (putting fabricfit's label on the pods), fabricfit pins
each pod and kube-scheduler binds it. The test reads back every pod's node (rank = group index
x size + worker index) and compares it with the TrainingTopology's plan.

The LeaderWorkerSet is created with fabricfit's scheduling gate in its templates: Kueue forbids
changing a queued LeaderWorkerSet's pod spec, so the gate cannot be added later.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from fabricfit_dev.e2e import kueue
from fabricfit_dev.e2e.admission import bound_at, check_active, check_state, seconds
from fabricfit_dev.e2e.kueue import checked_queue
from fabricfit_dev.e2e.lws import LWS, bound_pods, leader_worker_set
from fabricfit_dev.e2e.objects import POOL_LABEL, TT, make_pool, planned, topology, wait_condition
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

pytestmark = pytest.mark.controllers("kueue", "lws")

GROUPS, SIZE = 2, 2


def group_workloads(custom: Any, namespace: str, uid: str) -> list[dict[str, Any]]:
    """Kueue's Workloads of the LeaderWorkerSet, by group index."""
    listing = custom.list_namespaced_custom_object(
        kueue.GROUP, kueue.VERSION, namespace, "workloads"
    )
    owned = [
        w for w in listing.get("items", [])
        if any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])
    ]  # fmt: skip
    index = "kueue.x-k8s.io/component-workload-index"
    return sorted(owned, key=lambda w: int(w["metadata"]["annotations"][index]))


def test_a_queued_lws_is_placed_whole_once_kueue_reserves_every_group(
    kueue_operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    # Two pools: only "adlws" is the flavor's, so a plan on "adlws-other" would be off-flavor.
    make_pool(core, "adlws", rail_groups_per_spine=2, nodes_per_rail_group=4)
    make_pool(core, "adlws-other", rail_groups_per_spine=1, nodes_per_rail_group=4)
    with checked_queue(custom, namespace, "adlws", gpus=GROUPS * SIZE * 8) as queue:
        wait_for(lambda: check_active(custom, queue), what="fabricfit to mark its check Active")
        started = time.monotonic()
        spec = topology("serve", "", {"tensor": 8, "data": GROUPS * SIZE},
                        placement={"mode": "admission-check"})  # fmt: skip
        spec["spec"]["workloadRef"] = {"apiVersion": f"{LWS[0]}/{LWS[1]}",
                                       "kind": "LeaderWorkerSet", "name": "serve"}  # fmt: skip
        custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
        owner = custom.create_namespaced_custom_object(
            *LWS[:2], namespace, LWS[2], leader_worker_set("serve", GROUPS, SIZE, queue=queue)
        )
        uid = owner["metadata"]["uid"]

        pods = wait_for(
            lambda: bound_pods(core, namespace, "serve", GROUPS, SIZE),
            timeout_seconds=120,
            what="the LeaderWorkerSet's 4 pods bound",
        )
        wall = time.monotonic() - started
        tt = wait_condition(custom, namespace, "serve", "Placed", "True")
        workloads = group_workloads(custom, namespace, uid)

    placed = {rank: p.spec.node_name for rank, p in pods.items()}
    assert placed == dict(enumerate(planned(tt)))
    nodes = {n.metadata.name: n.metadata.labels for n in core.list_node().items}
    assert {nodes[node][POOL_LABEL] for node in placed.values()} == {"adlws"}
    for pod in pods.values():
        assert not pod.spec.scheduling_gates  # Kueue's gate and fabricfit's both lifted
        assert pod.metadata.labels["fabricfit.dev/topology"] == "serve"  # from podSetUpdates
    # Kueue made one Workload per group; fabricfit answered both Ready.
    assert len(workloads) == GROUPS
    for workload in workloads:
        check = check_state(workload, queue)
        assert check["state"] == "Ready" and check["message"].startswith("placed by fabricfit")
        assert [u["name"] for u in check["podSetUpdates"]] == ["leader", "worker"]
    # The real LWS controller made the pods (StatefulSets), and its templates were never patched
    # (a template change would have rolled the groups out: one revision only).
    assert {p.metadata.owner_references[0].kind for p in pods.values()} == {"StatefulSet"}
    live = custom.get_namespaced_custom_object(*LWS[:2], namespace, LWS[2], "serve")
    assert live["metadata"]["generation"] == 1
    created = min(seconds(w["metadata"]["creationTimestamp"]) for w in workloads)
    last = max(bound_at(p) for p in pods.values())
    print(
        f"\n[admission] LeaderWorkerSet 2 groups x 2 pods x 8 GPUs: first Workload created -> "
        f"all {len(pods)} pods bound: {last - created:.0f} s by the API server's clock "
        f"(1 s resolution); {wall:.2f} s wall clock from the LWS's creation"
    )
