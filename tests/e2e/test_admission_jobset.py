"""``admission-check`` mode with a JobSet and its real controllers: Kueue reserves quota for the
JobSet's Workload (one PodSet per replicated job), fabricfit plans on the ResourceFlavor's
nodes, gates every replicated job's template and sets its check Ready; Kueue admits and
unsuspends the JobSet, the JobSet controller creates the child Jobs, the Job controller their
pods, fabricfit pins each one and kube-scheduler binds it. The test reads back the node of
every pod and compares it with the TrainingTopology's plan (ranks numbered as Kueue numbers
JobSet pods)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from fabricfit_dev.e2e import kueue
from fabricfit_dev.e2e.admission import check_active, check_state, report_latency
from fabricfit_dev.e2e.jobset import JOBSET, bound_pods, jobset, rank_of
from fabricfit_dev.e2e.kueue import checked_queue
from fabricfit_dev.e2e.objects import POOL_LABEL, TT, make_pool, planned, topology, wait_condition
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

pytestmark = pytest.mark.controllers("kueue", "jobset")


def test_a_queued_jobset_is_admitted_by_kueue_and_every_pod_binds_to_its_planned_node(
    kueue_operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    # Two pools: only "adjs" is the flavor's, so a plan on "adjs-other" would be off-flavor.
    make_pool(core, "adjs", rail_groups_per_spine=2, nodes_per_rail_group=4)
    make_pool(core, "adjs-other", rail_groups_per_spine=1, nodes_per_rail_group=4)
    replicated = [("driver", 1, 1), ("workers", 2, 2)]  # 1 + 2x2 = 5 pods of 8 GPUs
    with checked_queue(custom, namespace, "adjs", gpus=64) as queue:
        wait_for(lambda: check_active(custom, queue), what="fabricfit to mark its check Active")
        started = time.monotonic()
        body = jobset("train", "adjs", replicated)
        body["metadata"]["labels"] = {kueue.QUEUE_LABEL: queue}
        spec = topology("train", "", {"tensor": 8, "data": 5},
                        placement={"mode": "admission-check"})  # fmt: skip
        spec["spec"]["workloadRef"] = {"apiVersion": f"{JOBSET[0]}/{JOBSET[1]}",
                                       "kind": "JobSet", "name": "train"}  # fmt: skip
        custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
        owner = custom.create_namespaced_custom_object(*JOBSET[:2], namespace, JOBSET[2], body)
        workload = kueue.wait_admitted(custom, namespace, owner["metadata"]["uid"])
        live = wait_for(lambda: bound_pods(core, namespace, 5), timeout_seconds=90,
                        what="the JobSet's 5 pods bound")  # fmt: skip
        wall = time.monotonic() - started
        tt = wait_condition(custom, namespace, "train", "Placed", "True")

    shapes = {name: (replicas, per_job) for name, replicas, per_job in replicated}
    order = [name for name, _, _ in replicated]
    placed = {rank_of(p, shapes, order): p.spec.node_name for p in live}
    assert placed == dict(enumerate(planned(tt)))
    nodes = {n.metadata.name: n.metadata.labels for n in core.list_node().items}
    assert {nodes[node][POOL_LABEL] for node in placed.values()} == {"adjs"}
    assert all(not p.spec.scheduling_gates for p in live)
    check = check_state(workload, queue)
    assert check["state"] == "Ready" and check["message"].startswith("placed by fabricfit")
    assert check["podSetUpdates"] == [
        {"name": name, "labels": {"fabricfit.dev/topology": "train"}} for name in order
    ]
    assert [p["name"] for p in workload["spec"]["podSets"]] == order
    # The real JobSet controller made the pods' Jobs, after Kueue unsuspended the JobSet.
    owner = custom.get_namespaced_custom_object(*JOBSET[:2], namespace, JOBSET[2], "train")
    assert owner["spec"]["suspend"] is False
    uid = owner["metadata"]["uid"]
    jobs = batch.list_namespaced_job(namespace).items
    children = [j for j in jobs if any(o.uid == uid for o in j.metadata.owner_references or [])]
    assert sorted(j.metadata.name for j in children) == [
        "train-driver-0", "train-workers-0", "train-workers-1"
    ]  # fmt: skip
    report_latency("JobSet 1 + 2x2 pods x 8 GPUs", workload, dict(enumerate(live)), wall)
