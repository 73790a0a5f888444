"""Reservations the cluster respects: kube-scheduler does not see fabricfit's reservations, so a
pod that is not fabricfit's can take a node a plan reserved. The job's pod pinned there stays
``Unschedulable``; fabricfit re-places it (the rest of the job stays where it runs), deletes the
stuck pod so the Job recreates it gated, pins the new pod, and the job runs. Every assertion
reads what the cluster did.

The Job's template carries a gate of the test's own besides fabricfit's
(``fabricfit_dev.e2e.held``): fabricfit pins and removes only its own, so the test decides when
kube-scheduler may try the pinned pods, and the foreign pod lands between plan and bind
deterministically.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from fabricfit_dev.e2e.held import bound, held_job, pinned, tenant
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    TT,
    condition,
    make_pool,
    planned,
    topology,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

GPU = "nvidia.com/gpu"


def gpus_per_node(core: Any, pool: str) -> dict[str, tuple[int, int]]:
    """Per node of the pool: (GPUs requested by its non-terminal pods, allocatable GPUs)."""
    nodes = core.list_node(label_selector=f"{POOL_LABEL}={pool}").items
    used: Counter[str] = Counter()
    for pod in core.list_pod_for_all_namespaces().items:
        if pod.spec.node_name and pod.status.phase not in ("Succeeded", "Failed"):
            for c in pod.spec.containers:
                used[pod.spec.node_name] += int((c.resources.limits or {}).get(GPU, 0))
    return {n.metadata.name: (used[n.metadata.name], int(n.status.allocatable[GPU])) for n in nodes}


def test_a_foreign_pod_on_a_reserved_node_gets_the_stuck_pod_replanned(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "resv", rail_groups_per_spine=2, nodes_per_rail_group=2)
    batch.create_namespaced_job(namespace, held_job("resv", 2, "resv"))
    spec = topology("resv", "resv", {"tensor": 8, "data": 2})
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
    plan = planned(wait_condition(custom, namespace, "resv", "Planned", "True"))
    first = wait_for(
        lambda: pinned(core, namespace, "resv", 2), what="both pods pinned by fabricfit"
    )[0]

    # Between plan and bind, kube-scheduler (which does not see reservations) gives another
    # team's pod the node fabricfit reserved for pod 0.
    victim = plan[0]
    core.create_namespaced_pod(namespace, tenant("tenant", victim, 8))
    wait_for(
        lambda: core.read_namespaced_pod("tenant", namespace).spec.node_name == victim,
        what="the tenant's pod bound to the reserved node",
    )
    started = time.monotonic()

    pods = wait_for(
        lambda: bound(core, namespace, "resv", 2), timeout_seconds=90, what="every pod bound"
    )
    elapsed = time.monotonic() - started
    tt = wait_condition(custom, namespace, "resv", "Placed", "True", timeout=30)
    moved = planned(tt)
    assert moved[1] == plan[1]  # the rest of the job stays where it was planned
    assert moved[0] != victim
    assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(moved))
    assert pods[0].metadata.uid != first.metadata.uid  # recreated by the Job, not re-pinned
    assert core.read_namespaced_pod("tenant", namespace).spec.node_name == victim
    reservation = {r["node"]: r["gpus"] for r in tt["status"]["reservation"]}
    assert reservation == {moved[0]: 8, moved[1]: 8}
    # Nothing double-booked, as the cluster counts it.
    booked = gpus_per_node(core, "resv")
    assert all(used <= capacity for used, capacity in booked.values()), booked
    assert booked[victim] == (8, 8)
    placed = condition(tt, "Placed")
    assert placed is not None and placed["reason"] == "AllPodsBound"
    print(f"stuck pod re-placed and bound {elapsed:.1f} s after the tenant took its node")
