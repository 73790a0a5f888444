"""A JobSet placed in ``pinned`` mode with its real controller: the JobSet controller creates the
child Jobs, the Job controller their pods, fabricfit gates and pins them, kube-scheduler binds,
and every pod (numbered as Kueue and fabricfit number JobSet ranks) is on its planned node."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit_dev.e2e import kueue
from fabricfit_dev.e2e.jobset import JOBSET, bound_pods, jobset, live_pods, rank_of
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    RAIL_GROUP,
    TT,
    foreign_pod,
    make_pool,
    planned,
    topology,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

pytestmark = pytest.mark.controllers("jobset")


def submit_jobset(
    custom: Any,
    namespace: str,
    pool: str,
    replicated: list[tuple[str, int, int]],
    parallelism: dict[str, int],
    **spec: Any,
) -> dict[str, Any]:
    """The suspended JobSet ``train`` and its TrainingTopology; returns the JobSet as stored."""
    custom.create_namespaced_custom_object(
        *JOBSET[:2], namespace, JOBSET[2], jobset("train", pool, replicated)
    )
    ref = {"apiVersion": f"{JOBSET[0]}/{JOBSET[1]}", "kind": "JobSet", "name": "train"}
    tt = topology("train", "", parallelism, workloadRef=ref, **spec)
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], tt)
    return dict(custom.get_namespaced_custom_object(*JOBSET[:2], namespace, JOBSET[2], "train"))


def test_jobset_pods_made_by_the_real_controllers_land_where_planned(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "jobset", rail_groups_per_spine=2, nodes_per_rail_group=4)
    replicated = [("driver", 1, 2), ("workers", 2, 2)]  # 2 + 2x2 = 6 pods of 8 GPUs
    submit_jobset(custom, namespace, "jobset", replicated, {"tensor": 8, "data": 6})

    plan = planned(wait_condition(custom, namespace, "train", "Placed", "True", timeout=120))
    live = live_pods(core, namespace)
    assert len(live) == 6
    shapes = {name: (replicas, per_job) for name, replicas, per_job in replicated}
    order = [name for name, _, _ in replicated]
    placed = {rank_of(p, shapes, order): p.spec.node_name for p in live}
    assert placed == dict(enumerate(plan))
    assert all(not p.spec.scheduling_gates for p in live)
    # The real JobSet controller made them: each pod's Job is owned by the JobSet.
    owner = custom.get_namespaced_custom_object(*JOBSET[:2], namespace, JOBSET[2], "train")
    assert owner["spec"]["suspend"] is False
    uid = owner["metadata"]["uid"]
    jobs = batch.list_namespaced_job(namespace).items
    children = [j for j in jobs if any(o.uid == uid for o in j.metadata.owner_references or [])]
    assert sorted(j.metadata.name for j in children) == [
        "train-driver-0", "train-workers-0", "train-workers-1"
    ]  # fmt: skip


@pytest.mark.controllers("kueue", "jobset")
def test_jobset_in_kueue_tas_mode_keeps_each_tp_pair_in_one_nvlink_domain(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    # Two rail groups of four nodes, NVLink domains of two; Kueue admits one PodSet per
    # replicated job and its ungater steers pods by rank (job index * pods per job + completion).
    nodes = make_pool(core, "jobtas", rail_groups_per_spine=2, nodes_per_rail_group=4,
                      nodes_per_rack=2, nvlink_domain_nodes=2)  # fmt: skip
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    replicated = [("workers", 2, 2)]
    with kueue.queues(custom, namespace, namespace, {POOL_LABEL: "jobtas"}, gpus=64) as queue:
        created = submit_jobset(custom, namespace, "jobtas", replicated,
                                {"tensor": 16, "data": 2}, queueName=queue,
                                placement={"mode": "kueue-tas"})  # fmt: skip
        wait_condition(custom, namespace, "train", "Planned", "True")
        workload = kueue.wait_admitted(custom, namespace, created["metadata"]["uid"])
        live = wait_for(lambda: bound_pods(core, namespace, 4), timeout_seconds=90,
                        what="the JobSet's pods bound")  # fmt: skip

    # Read after admission: Planned=True is written before the template patch is applied.
    owner = custom.get_namespaced_custom_object(*JOBSET[:2], namespace, JOBSET[2], "train")
    template = owner["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    level = annotations["kueue.x-k8s.io/podset-required-topology"]
    assert annotations["kueue.x-k8s.io/podset-slice-size"] == "2"
    placed = {rank_of(p, {"workers": (2, 2)}, ["workers"]): p.spec.node_name for p in live}
    (assignment,) = kueue.podset_assignments(workload).values()
    counts = kueue.assignment_counts(assignment["topologyAssignment"])
    assert counts == {(n,): list(placed.values()).count(n) for n in set(placed.values())}
    assert len({kueue.domain_of(labels[n], level) for n in placed.values()}) == 1
    nvlink = kueue.NATIVE + "nvlink-domain"
    for first in (0, 2):
        pair = {kueue.domain_of(labels[placed[i]], nvlink) for i in (first, first + 1)}
        assert len(pair) == 1, f"ranks {first},{first + 1} split across NVLink domains: {placed}"


@pytest.mark.controllers("kueue", "jobset")
def test_a_driver_and_its_workers_share_the_rail_group_through_a_podset_group(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    # The first rail group has one free node, the second four. The plan puts the driver and its
    # three workers in the second; Kueue admits them as two PodSets and, without a group, would
    # be free to best-fit the single driver into the first rail group's last free node.
    # (Every node carries every level of the Kueue Topology, NVLink domain included: Kueue
    # only counts such nodes.)
    nodes = make_pool(core, "group", rail_groups_per_spine=2, nodes_per_rail_group=4,
                      nodes_per_rack=2, nvlink_domain_nodes=2)  # fmt: skip
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    for i, node in enumerate(nodes[:3]):
        core.create_namespaced_pod(
            namespace, foreign_pod(f"tenant-{i}", node["metadata"]["name"], 8)
        )
    replicated = [("driver", 1, 1), ("workers", 1, 3)]
    with kueue.queues(custom, namespace, namespace, {POOL_LABEL: "group"}, gpus=64) as queue:
        owner = submit_jobset(custom, namespace, "group", replicated, {"tensor": 8, "data": 4},
                              queueName=queue, placement={"mode": "kueue-tas"})  # fmt: skip
        wait_condition(custom, namespace, "train", "Planned", "True")
        kueue.wait_admitted(custom, namespace, owner["metadata"]["uid"])
        live = wait_for(lambda: bound_pods(core, namespace, 4), timeout_seconds=90,
                        what="the JobSet's pods bound")  # fmt: skip

    groups = {kueue.domain_of(labels[p.spec.node_name], RAIL_GROUP) for p in live}
    assert len(groups) == 1, [p.spec.node_name for p in live]
    owner = custom.get_namespaced_custom_object(*JOBSET[:2], namespace, JOBSET[2], "train")
    for rj in owner["spec"]["replicatedJobs"]:
        annotations = rj["template"]["spec"]["template"]["metadata"]["annotations"]
        assert annotations["kueue.x-k8s.io/podset-group-name"] == "fabricfit-train"
        assert annotations["kueue.x-k8s.io/podset-required-topology"] == RAIL_GROUP
        assert "kueue.x-k8s.io/podset-slice-size" not in annotations
