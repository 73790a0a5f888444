"""Nothing stranded: deleting a TrainingTopology leaves its workload's future pods schedulable.

A running Job's pod template is immutable, so it keeps fabricfit's scheduling gate; a pod the
Job creates after the deletion is ungated by the operator as it appears. A suspended Job's
template loses the gate at once. Every assertion reads what the cluster did.
"""

from __future__ import annotations

from typing import Any

from fabricfit_dev.e2e.objects import (
    TT,
    job_pods,
    make_pool,
    read_topology,
    submit_job,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

GATE = "fabricfit.dev/placement"


def topology_gone(custom: Any, namespace: str, name: str) -> bool:
    return name not in {
        tt["metadata"]["name"]
        for tt in custom.list_namespaced_custom_object(*TT[:2], namespace, TT[2])["items"]
    }


def scheduled_after_seconds(pod: Any) -> float:
    """Seconds from the pod's creation to kube-scheduler binding it (the API server's clock,
    whole seconds)."""
    scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert scheduled.status == "True"
    return (scheduled.last_transition_time - pod.metadata.creation_timestamp).total_seconds()


def test_a_pod_recreated_after_its_topology_is_deleted_schedules_at_once(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "gone", rail_groups_per_spine=1, nodes_per_rail_group=4)
    submit_job(batch, custom, namespace, "gone", pods=2, pool="gone",
               parallelism={"tensor": 8, "data": 2})  # fmt: skip
    wait_condition(custom, namespace, "gone", "Placed", "True")
    old = wait_bound(core, namespace, "gone", 2)[0]
    template = batch.read_namespaced_job("gone", namespace).spec.template.spec
    assert [g.name for g in template.scheduling_gates] == [GATE]  # immutable while it runs

    custom.delete_namespaced_custom_object(*TT[:2], namespace, TT[2], "gone")
    wait_for(lambda: topology_gone(custom, namespace, "gone"), what="the topology deleted")
    core.delete_namespaced_pod(old.metadata.name, namespace, grace_period_seconds=0)

    def recreated() -> Any:
        pod = job_pods(core, namespace, "gone").get(0)
        fresh = pod is not None and pod.metadata.uid != old.metadata.uid
        return pod if fresh and pod.spec.node_name else None

    # The Job controller waits out its failure back-off (10 s) before creating the pod.
    pod = wait_for(recreated, timeout_seconds=60, what="index 0 recreated and bound")
    assert not pod.spec.scheduling_gates
    assert pod.metadata.labels["fabricfit.dev/topology"] == "gone"  # from the template
    waited = scheduled_after_seconds(pod)
    print(f"recreated pod bound {waited:.0f} s after its creation")
    assert waited <= 5


def test_deleting_the_topology_of_a_queued_job_ungates_its_template(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "queued", rail_groups_per_spine=1, nodes_per_rail_group=2)
    submit_job(batch, custom, namespace, "queued", pods=2, pool="queued",
               parallelism={"tensor": 8, "data": 2}, queueName="team-a")  # fmt: skip
    wait_for(
        lambda: batch.read_namespaced_job("queued", namespace).spec.template.spec.scheduling_gates,
        what="the suspended Job's template gated",
    )
    assert read_topology(custom, namespace, "queued")["status"]["reservation"]

    custom.delete_namespaced_custom_object(*TT[:2], namespace, TT[2], "queued")
    wait_for(lambda: topology_gone(custom, namespace, "queued"), what="the topology deleted")
    job = batch.read_namespaced_job("queued", namespace)
    assert not job.spec.template.spec.scheduling_gates
    assert job.spec.suspend is True  # fabricfit leaves admission to the queue

    batch.patch_namespaced_job("queued", namespace, {"spec": {"suspend": False}})
    pods = wait_bound(core, namespace, "queued", 2)
    assert all(not p.spec.scheduling_gates for p in pods.values())
