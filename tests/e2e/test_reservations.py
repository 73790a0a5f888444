"""Reservations the cluster respects: kube-scheduler does not see fabricfit's reservations, so a
pod that is not fabricfit's can take a node a plan reserved. The job's pod pinned there stays
``Unschedulable``; fabricfit re-places it (the rest of the job stays where it runs), deletes the
stuck pod so the Job recreates it gated, pins the new pod, and the job runs. Every assertion
reads what the cluster did.

The Job's template carries a gate of the test's own besides fabricfit's: fabricfit pins and
removes only its own, so the test decides when kube-scheduler may try the pinned pods, and the
foreign pod lands between plan and bind deterministically.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from helpers.cluster import (
    POOL_LABEL,
    TT,
    condition,
    indexed_job,
    job_pods,
    make_pool,
    planned,
    topology,
    wait_condition,
)
from helpers.operator import OperatorProcess
from helpers.waiting import wait_for

HOLD = "e2e.fabricfit.dev/hold"
GATE = "fabricfit.dev/placement"
GPU = "nvidia.com/gpu"


def held_job(name: str, pods: int, pool: str) -> dict[str, Any]:
    """A suspended Indexed Job whose pods also carry the test's own gate."""
    job = indexed_job(name, pods, pool)
    job["spec"]["template"]["spec"]["schedulingGates"] = [{"name": HOLD}]
    return job


def tenant(name: str, node: str, gpus: int) -> dict[str, Any]:
    """Another team's pod that kube-scheduler places on ``node`` (no fabricfit label)."""
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "c", "image": "example.invalid/other:1",
                            "resources": {"limits": {GPU: str(gpus)}}}],
        },
    }  # fmt: skip


def gates(pod: Any) -> list[str]:
    return [g.name for g in pod.spec.scheduling_gates or []]


def release_hold(core: Any, namespace: str, job: str) -> None:
    """Remove the test's gate from every pod of the job that fabricfit has pinned."""
    for pod in job_pods(core, namespace, job).values():
        names = gates(pod)
        if HOLD not in names or GATE in names:
            continue
        index = names.index(HOLD)
        ops = [{"op": "test", "path": f"/spec/schedulingGates/{index}/name", "value": HOLD},
               {"op": "remove", "path": f"/spec/schedulingGates/{index}"}]  # fmt: skip
        try:
            core.patch_namespaced_pod(pod.metadata.name, namespace, ops)
        except Exception:  # changed or deleted meanwhile: the next pass sees it
            continue


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
    wait_for(
        lambda: (
            len(p := job_pods(core, namespace, "resv")) == 2
            and all(gates(pod) == [HOLD] for pod in p.values())
        ),
        what="both pods pinned by fabricfit (only the test's gate left)",
    )
    first = job_pods(core, namespace, "resv")[0]

    # Between plan and bind, kube-scheduler (which does not see reservations) gives another
    # team's pod the node fabricfit reserved for pod 0.
    victim = plan[0]
    core.create_namespaced_pod(namespace, tenant("tenant", victim, 8))
    wait_for(
        lambda: core.read_namespaced_pod("tenant", namespace).spec.node_name == victim,
        what="the tenant's pod bound to the reserved node",
    )
    started = time.monotonic()

    def running() -> dict[int, Any] | None:
        release_hold(core, namespace, "resv")
        pods = job_pods(core, namespace, "resv")
        return pods if len(pods) == 2 and all(p.spec.node_name for p in pods.values()) else None

    pods = wait_for(running, timeout_seconds=90, what="every pod of the job bound")
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
