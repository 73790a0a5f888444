"""``queuePolicy: wait-if-faster`` with the real Kueue: fabricfit holds a job through its
AdmissionCheck while a better placement frees up soon, and places it there once it has.

A kwok pool of one spine and two rail groups of four DGX-H100 nodes, priced as the 2:1
leaf/spine preset. A blocking job of two pods declares its run time with Kueue's
``kueue.x-k8s.io/max-exec-time-seconds`` label and is placed by fabricfit in one rail group
(X); a tenant's pod holds one node of the other (Y). A communication-heavy job of four pods
(TP8 × DP4, 20B parameters over few tokens per step) that declares an hour's run then fits
only split over X and Y, its data-parallel rings climbing the 2:1 uplinks; X frees up when
Kueue stops the blocking job. fabricfit answers ``Retry`` with a message naming the placement
waited for and the step-seconds it saves; a one-pod job submitted meanwhile, which declares no
end, is placed beside the held job (in Y, though alone it would take X's tighter free nodes);
Kueue deactivates the blocking job at its declared time, and the held job is admitted and
bound to the four nodes of X. The test reads every pod's node back and prints the times.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit_dev.e2e import kueue
from fabricfit_dev.e2e.admission import check_active, check_entry
from fabricfit_dev.e2e.kueue import checked_queue
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    RAIL_GROUP,
    TT,
    foreign_pod,
    indexed_job,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

pytestmark = pytest.mark.controllers("kueue")

FABRIC = "h100-leaf-spine-2to1"
MAX_EXEC = "kueue.x-k8s.io/max-exec-time-seconds"
BLOCKER_SECONDS = 45
MODEL = {"parameters": 20_000_000_000, "hiddenSize": 6144, "layers": 44, "sequenceLength": 256,
         "microBatchSize": 1, "microBatches": 1, "bytesPerElement": 2}  # fmt: skip
HELD = "fabricfit holds this job for a better placement"


def submit(
    custom: Any, batch: Any, namespace: str, name: str, pods: int, queue: str, pool: str,
    *, run_seconds: int | None, **placement: str,
) -> str:  # fmt: skip
    """An admission-check TrainingTopology (TP8 × DP pods) and its queued Job; the Job's uid."""
    spec = topology(name, name, {"tensor": 8, "data": pods}, model=MODEL,
                    placement={"mode": "admission-check", **placement})  # fmt: skip
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
    job = indexed_job(name, pods, pool)
    job["metadata"]["labels"] = {kueue.QUEUE_LABEL: queue}
    if run_seconds is not None:
        job["metadata"]["labels"][MAX_EXEC] = str(run_seconds)
    return str(batch.create_namespaced_job(namespace, job).metadata.uid)


def groups_of(core: Any, nodes: list[str]) -> list[str]:
    labels = {n.metadata.name: n.metadata.labels for n in core.list_node().items}
    return [labels[n][RAIL_GROUP] for n in nodes]


def retry_message(custom: Any, namespace: str, uid: str, check: str) -> str | None:
    """fabricfit's Retry message, from its check or from Kueue's eviction that followed it."""
    wl = kueue.workload_of(custom, namespace, uid) or {}
    entry = check_entry(wl, check) or {}
    evicted = [c["message"] for c in (wl.get("status") or {}).get("conditions") or []
               if c["type"] == "Evicted" and c["reason"] == "AdmissionCheck"]  # fmt: skip
    return next((m for m in [entry.get("message", ""), *evicted] if HELD in m), None)


def test_a_held_job_gets_retry_with_why_and_is_placed_on_the_nodes_it_waited_for(
    kueue_operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    pool = "adm-wait"
    make_pool(core, pool, rail_groups_per_spine=2, nodes_per_rail_group=4, fabric=FABRIC)
    nodes = {n.metadata.name: n.metadata.labels[RAIL_GROUP]
             for n in core.list_node(label_selector=f"{POOL_LABEL}={pool}").items}  # fmt: skip
    with checked_queue(custom, namespace, pool, gpus=64) as queue:
        wait_for(lambda: check_active(custom, queue), what="fabricfit to mark its check Active")
        blocker_uid = submit(custom, batch, namespace, "blocker", 2, queue, pool,
                             run_seconds=BLOCKER_SECONDS)  # fmt: skip
        kueue.wait_admitted(custom, namespace, blocker_uid)
        blocked = wait_bound(core, namespace, "blocker", 2)
        (group_x,) = set(groups_of(core, [p.spec.node_name for p in blocked.values()]))
        other = sorted(n for n, g in nodes.items() if g != group_x)
        core.create_namespaced_pod(namespace, foreign_pod("tenant", other[0], 8))

        started = time.monotonic()
        held_uid = submit(custom, batch, namespace, "held", 4, queue, pool, run_seconds=3600,
                          queuePolicy="wait-if-faster")  # fmt: skip
        message = wait_for(
            lambda: retry_message(custom, namespace, held_uid, queue),
            timeout_seconds=60,
            what="fabricfit to hold the job with Retry",
        )
        held_after = time.monotonic() - started
        tt = read_topology(custom, namespace, "held")
        planned_cond = next(c for c in tt["status"]["conditions"] if c["type"] == "Planned")

        small_uid = submit(custom, batch, namespace, "small", 1, queue, pool, run_seconds=None)
        kueue.wait_admitted(custom, namespace, small_uid)
        (small_pod,) = wait_bound(core, namespace, "small", 1).values()

        held_wl = kueue.wait_admitted(custom, namespace, held_uid, timeout=BLOCKER_SECONDS + 90)
        pods = wait_bound(core, namespace, "held", 4)
        wall = time.monotonic() - started
        wait_condition(custom, namespace, "held", "Placed", "True")
        placed = planned(read_topology(custom, namespace, "held"))
        blocker_wl = kueue.workload_of(custom, namespace, blocker_uid) or {}

    assert f"/{group_x} ×4 (now:" in message  # the placement waited for, all in X
    assert "step-seconds saved over its declared run of 3600 s" in message
    said = (planned_cond["status"], planned_cond["reason"])
    assert said == ("Unknown", "WaitingForBetterPlacement")
    assert nodes[small_pod.spec.node_name] != group_x  # beside the hold, not on X
    assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(placed))
    assert set(groups_of(core, placed)) == {group_x}  # the whole rail group it waited for
    assert all(p.metadata.labels[TOPOLOGY_LABEL] == "held" for p in pods.values())
    deactivated = [c for c in blocker_wl["status"]["conditions"]
                   if c["type"] == "Evicted" and c["status"] == "True"]  # fmt: skip
    assert deactivated, "Kueue stopped the blocking job at its declared run time"
    retries = max((c.get("retryCount") or 0) for c in held_wl["status"]["admissionChecks"])
    print(
        f"\n[admission] wait-if-faster: held with Retry {held_after:.1f} s after submission "
        f"({message.split(': ', 1)[1]}); admitted and all 4 pods bound on {group_x} "
        f"{wall:.1f} s after submission (the blocker declared {BLOCKER_SECONDS} s), "
        f"fabricfit's check retried {retries} times; the one-pod job went to "
        f"{nodes[small_pod.spec.node_name]}"
    )
