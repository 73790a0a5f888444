"""A LeaderWorkerSet placed in ``pinned`` mode with its real controller: the LWS controller
creates the leader StatefulSet and its pod, the leader's workers, fabricfit pins each one, and
every pod (numbered group index * size + worker index) is bound to its planned node.

LWS has no suspend flag, so its templates carry the ``fabricfit.dev/placement`` scheduling gate
from the start, as plain Pods do.
"""

from __future__ import annotations

from typing import Any

import pytest

from helpers.cluster import POOL_LABEL, TT, make_pool, planned, topology, wait_condition
from helpers.operator import OperatorProcess
from helpers.waiting import wait_for

pytestmark = pytest.mark.controllers("lws")

LWS = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
GATE = "fabricfit.dev/placement"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"


def leader_worker_set(name: str, pool: str, groups: int, size: int) -> dict[str, Any]:
    pod = {"spec": {
        "schedulingGates": [{"name": GATE}],
        "nodeSelector": {POOL_LABEL: pool},
        "containers": [{"name": "serve", "image": "example.invalid/serve:1",
                        "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
    }}  # fmt: skip
    return {
        "apiVersion": f"{LWS[0]}/{LWS[1]}",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": groups,
            "leaderWorkerTemplate": {"size": size, "leaderTemplate": pod, "workerTemplate": pod},
        },
    }


def test_lws_pods_made_by_the_real_controller_land_where_planned(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    make_pool(core, "lws", rail_groups_per_spine=2, nodes_per_rail_group=4)
    custom.create_namespaced_custom_object(
        *LWS[:2], namespace, LWS[2], leader_worker_set("serve", "lws", groups=2, size=3)
    )
    spec = topology("serve", "", {"tensor": 8, "pipeline": 3, "data": 2})
    spec["spec"]["workloadRef"] = {"apiVersion": "leaderworkerset.x-k8s.io/v1",
                                   "kind": "LeaderWorkerSet", "name": "serve"}  # fmt: skip
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)

    plan = planned(wait_condition(custom, namespace, "serve", "Placed", "True", timeout=120))
    selector = "leaderworkerset.sigs.k8s.io/name=serve"

    def bound() -> dict[int, Any] | None:
        pods = core.list_namespaced_pod(namespace, label_selector=selector).items
        live = [p for p in pods if p.metadata.deletion_timestamp is None]
        ranks = {
            int(p.metadata.labels[GROUP_INDEX]) * 3 + int(p.metadata.labels[WORKER_INDEX]): p
            for p in live
        }
        done = len(live) == 6 and len(ranks) == 6 and all(p.spec.node_name for p in live)
        return ranks if done else None

    pods = wait_for(bound, timeout_seconds=90, what="the six LWS pods bound")
    assert {rank: p.spec.node_name for rank, p in pods.items()} == dict(enumerate(plan))
    assert all(not p.spec.scheduling_gates for p in pods.values())
    # The real controller made them: leaders belong to the LWS's StatefulSet, workers to theirs.
    owners = {p.metadata.owner_references[0].kind for p in pods.values()}
    assert owners == {"StatefulSet"}
