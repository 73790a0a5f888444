"""A Kubeflow Trainer v2 TrainJob placed in ``pinned`` mode with the real Trainer and JobSet
controllers: fabricfit writes its runtimePatches entry and unsuspends the TrainJob, the Trainer
builds the JobSet, the JobSet and Job controllers make the pods, fabricfit pins them, and every
pod (rank = completion index of the ``node`` job) is bound to its planned node."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fabricfit_dev.e2e.objects import POOL_LABEL, TT, make_pool, planned, topology, wait_condition
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

pytestmark = pytest.mark.controllers("jobset", "trainer")

GROUP, VERSION = "trainer.kubeflow.org", "v1alpha1"
NODES = 3


def runtime(name: str) -> dict[str, Any]:
    """A ClusterTrainingRuntime of one replicated job ``node`` (torch policy, one process)."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {"spec": {"replicatedJobs": [{"name": "node", "template": {
                "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
                "spec": {"template": {"spec": {"containers": [
                    {"name": "node", "image": "example.invalid/train:1"},
                ]}}},
            }}]}},
        },
    }  # fmt: skip


def trainjob(name: str, runtime_name: str, pool: str) -> dict[str, Any]:
    """A suspended TrainJob of NODES nodes of 8 GPUs, fenced into ``pool`` by its own patch."""
    fence = {"replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
        "spec": {"nodeSelector": {POOL_LABEL: pool}}}}}}]}  # fmt: skip
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {
            "suspend": True,
            "runtimeRef": {"name": runtime_name},
            "trainer": {"numNodes": NODES,
                        "resourcesPerNode": {"limits": {"nvidia.com/gpu": "8"}}},
            "runtimePatches": [{"manager": "example.com/e2e",
                                "trainingRuntimeSpec": {"template": {"spec": fence}}}],
        },
    }  # fmt: skip


def bound_pods(core: Any, namespace: str) -> list[Any] | None:
    selector = "jobset.sigs.k8s.io/jobset-name=train,jobset.sigs.k8s.io/replicatedjob-name=node"
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    live = [p for p in pods if p.metadata.deletion_timestamp is None]
    return live if len(live) == NODES and all(p.spec.node_name for p in live) else None


def test_trainjob_pods_made_by_the_real_trainer_land_where_planned(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    make_pool(core, "trainjob", rail_groups_per_spine=2, nodes_per_rail_group=4)
    runtime_name = f"ff-torch-{uuid.uuid4().hex[:6]}"
    custom.create_cluster_custom_object(GROUP, VERSION, "clustertrainingruntimes",
                                        runtime(runtime_name))  # fmt: skip
    try:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "trainjobs", trainjob("train", runtime_name, "trainjob")
        )
        ref = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "TrainJob", "name": "train"}
        tt = topology("train", "", {"tensor": 8, "data": NODES}, workloadRef=ref)
        del tt["spec"]["gpusPerPod"]  # settled from resourcesPerNode
        custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], tt)

        plan = planned(wait_condition(custom, namespace, "train", "Placed", "True", timeout=180))
        live = wait_for(lambda: bound_pods(core, namespace), timeout_seconds=60,
                        what="the TrainJob's pods bound")  # fmt: skip
        index = "batch.kubernetes.io/job-completion-index"
        placed = {int(p.metadata.labels[index]): p.spec.node_name for p in live}
        assert placed == dict(enumerate(plan))
        assert all(not p.spec.scheduling_gates for p in live)

        # The real Trainer built the JobSet from fabricfit's patch, and the TrainJob runs.
        job = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "trainjobs", "train")
        assert job["spec"]["suspend"] is False
        managers = [p["manager"] for p in job["spec"]["runtimePatches"]]
        assert managers == ["example.com/e2e", "fabricfit.dev/placement"]
        jobset = custom.get_namespaced_custom_object(
            "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets", "train"
        )
        (owner,) = jobset["metadata"]["ownerReferences"]
        assert owner["kind"] == "TrainJob" and owner["uid"] == job["metadata"]["uid"]
        pod_spec = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        assert pod_spec["nodeSelector"] == {POOL_LABEL: "trainjob"}
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "clustertrainingruntimes", runtime_name)
