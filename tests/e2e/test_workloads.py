"""Placement modes and workload kinds on the real control plane: plain Pods pinned through the
gate, advisory mode leaving the workload untouched, kueue-tas mode writing Kueue's keys, and
deletion releasing gated pods without touching the workload."""

from __future__ import annotations

from typing import Any

from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    TT,
    condition,
    indexed_job,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

GATE = "fabricfit.dev/placement"


def gated_pod(name: str, rank: int, pool: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": "finetune", "rank": str(rank)}},
        "spec": {
            "schedulingGates": [{"name": GATE}],
            "nodeSelector": {POOL_LABEL: pool},
            "containers": [{"name": "train", "image": "example.invalid/train:1",
                            "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        },
    }  # fmt: skip


def pod_topology(name: str, pods: int) -> dict[str, Any]:
    tt = topology(name, "", {"tensor": 8, "data": pods})
    selector = {"app": "finetune"}
    tt["spec"]["workloadRef"] = {
        "apiVersion": "v1", "kind": "Pod", "podSelector": selector, "indexLabel": "rank"
    }  # fmt: skip
    return tt


def test_plain_pods_are_pinned_through_the_gate(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    make_pool(core, "plain", rail_groups_per_spine=2, nodes_per_rail_group=2)
    for rank in range(2):
        core.create_namespaced_pod(namespace, gated_pod(f"worker-{rank}", rank, "plain"))
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], pod_topology("finetune", 2))

    plan = planned(wait_condition(custom, namespace, "finetune", "Placed", "True"))
    for rank in range(2):
        pod = core.read_namespaced_pod(f"worker-{rank}", namespace)
        assert pod.spec.node_name == plan[rank]
        assert not pod.spec.scheduling_gates
        assert pod.metadata.labels["fabricfit.dev/topology"] == "finetune"


def test_advisory_mode_reports_and_changes_nothing(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "advice", rail_groups_per_spine=1, nodes_per_rail_group=2)
    batch.create_namespaced_job(namespace, indexed_job("advised", 2, "advice"))
    before = batch.read_namespaced_job("advised", namespace).spec.template.to_dict()
    spec = topology("advised", "advised", {"tensor": 8, "data": 2}, placement={"mode": "advisory"})
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)

    tt = wait_condition(custom, namespace, "advised", "Planned", "True")
    assert tt["status"]["predicted"]["stepCommSeconds"] > 0
    assert condition(wait_condition(custom, namespace, "advised", "Placed", "False"), "Placed")[
        "reason"
    ] == "Advisory"  # fmt: skip
    job = batch.read_namespaced_job("advised", namespace)
    assert job.spec.suspend is True
    assert job.spec.template.to_dict() == before


def test_kueue_tas_mode_writes_kueue_keys(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    # NVLink domains of two 8-GPU nodes, so a TP16 group (two pods) fits in one domain.
    make_pool(core, "kueue", rail_groups_per_spine=2, nodes_per_rail_group=4, nvlink_domain_nodes=2)
    batch.create_namespaced_job(namespace, indexed_job("queued", 4, "kueue"))
    spec = topology(
        "queued", "queued", {"tensor": 16, "data": 2}, queueName="team-a",
        placement={"mode": "kueue-tas"},
    )  # fmt: skip
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
    wait_condition(custom, namespace, "queued", "Planned", "True")

    def annotated() -> Any:
        job = batch.read_namespaced_job("queued", namespace)
        return job if (job.spec.template.metadata.annotations or {}) else None

    job = wait_for(annotated, what="Kueue annotations on the pod template")
    annotations = job.spec.template.metadata.annotations
    assert job.metadata.labels["kueue.x-k8s.io/queue-name"] == "team-a"
    assert job.spec.template.metadata.labels["kueue.x-k8s.io/queue-name"] == "team-a"
    topology_keys = {k: v for k, v in annotations.items() if k.startswith("kueue.x-k8s.io/podset-")}
    # The finest tier whose single domain holds the whole plan is what Kueue must respect.
    required = topology_keys["kueue.x-k8s.io/podset-required-topology"]
    assert required in ("topology.fabricfit.dev/rack", "topology.fabricfit.dev/rail-group")
    plan = planned(read_topology(custom, namespace, "queued"))
    assert len({core.read_node(n).metadata.labels[required] for n in plan}) == 1
    assert topology_keys["kueue.x-k8s.io/podset-slice-required-topology"] == (
        "topology.fabricfit.dev/nvlink-domain"
    )
    assert topology_keys["kueue.x-k8s.io/podset-slice-size"] == "2"
    assert not job.spec.template.spec.scheduling_gates  # Kueue places, not the gate
    assert job.spec.suspend is True  # Kueue, not fabricfit, admits the job


def test_deleting_the_topology_ungates_pods_and_keeps_the_workload(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    make_pool(core, "release", rail_groups_per_spine=1, nodes_per_rail_group=1)
    for rank in range(2):
        core.create_namespaced_pod(namespace, gated_pod(f"worker-{rank}", rank, "release"))
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], pod_topology("toobig", 2))
    tt = wait_condition(custom, namespace, "toobig", "Planned", "False")
    assert condition(tt, "Planned")["reason"] == "InsufficientGPUs"  # type: ignore[index]
    assert read_topology(custom, namespace, "toobig")["metadata"]["finalizers"] == [
        "fabricfit.dev/finalizer"
    ]

    custom.delete_namespaced_custom_object(*TT[:2], namespace, TT[2], "toobig")

    def released() -> bool:
        pods = [core.read_namespaced_pod(f"worker-{r}", namespace) for r in range(2)]
        return all(not p.spec.scheduling_gates for p in pods)

    wait_for(released, what="gates removed from the pods")
    bound = wait_for(
        lambda: [p for p in core.list_namespaced_pod(namespace).items if p.spec.node_name],
        what="kube-scheduler to bind the pod that fits",
    )
    assert len(bound) == 1  # one 8-GPU node: the other pod stays Pending, neither is deleted
    assert len(core.list_namespaced_pod(namespace).items) == 2
