"""``admission-check`` mode against the real Kueue: fabricfit is the controller of an
AdmissionCheck (``fabricfit.dev/placement``) that a ClusterQueue lists.

Kueue reserves quota for the Job's Workload, fabricfit plans on the ResourceFlavor's nodes,
gates the suspended Job's template and sets the check Ready; Kueue admits and unsuspends the
Job, its pods are created gated and fabricfit pins each one; kube-scheduler binds them. The
tests read back where every pod was bound, what Kueue recorded on the Workload, and the time
from the Workload's creation to the last pod bound (printed). A job that cannot fit gets Retry
with the planner's message; a higher-priority Workload preempting a placed one gets its GPUs.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit_dev.e2e import kueue
from fabricfit_dev.e2e.admission import (
    check_active,
    check_entry,
    check_state,
    report_latency,
)
from fabricfit_dev.e2e.kueue import checked_queue, cluster_objects
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    TT,
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

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "deploy" / "samples" / "kueue" / "admission-check.yaml"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{kueue.GROUP}/{kueue.VERSION}",
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def queued_job(name: str, pods: int, pool: str, queue: str, priority: str | None = None) -> Any:
    job = indexed_job(name, pods, pool)
    job["metadata"]["labels"] = {kueue.QUEUE_LABEL: queue}
    if priority is not None:
        job["metadata"]["labels"][PRIORITY_LABEL] = priority
    return job


def submit(custom: Any, batch: Any, namespace: str, name: str, pods: int, job: Any) -> str:
    """The TrainingTopology (admission-check mode, TP8 x pods) and its Job; the Job's uid."""
    spec = topology(name, name, {"tensor": 8, "data": pods}, placement={"mode": "admission-check"})
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
    return str(batch.create_namespaced_job(namespace, job).metadata.uid)


def assert_bound_as_planned(custom: Any, namespace: str, name: str, pods: dict[int, Any]) -> None:
    plan = planned(read_topology(custom, namespace, name))
    assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(plan))


def test_kueue_admits_and_fabricfit_binds_every_pod_to_its_planned_node(
    kueue_operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    # Two pools: only "adm" is the flavor's, so a plan on "other" would be off-flavor.
    make_pool(core, "adm", rail_groups_per_spine=2, nodes_per_rail_group=4)
    make_pool(core, "adm-other", rail_groups_per_spine=1, nodes_per_rail_group=4)
    with checked_queue(custom, namespace, "adm", gpus=64) as queue:
        wait_for(lambda: check_active(custom, queue), what="fabricfit to mark its check Active")
        started = time.monotonic()
        uid = submit(custom, batch, namespace, "train", 4, queued_job("train", 4, "adm", queue))
        workload = kueue.wait_admitted(custom, namespace, uid)
        pods = wait_bound(core, namespace, "train", 4)
        wall = time.monotonic() - started
        wait_condition(custom, namespace, "train", "Placed", "True")

    assert_bound_as_planned(custom, namespace, "train", pods)
    nodes = {n.metadata.name: n.metadata.labels for n in core.list_node().items}
    assert {nodes[p.spec.node_name][POOL_LABEL] for p in pods.values()} == {"adm"}
    check = check_state(workload, queue)
    assert check["state"] == "Ready" and check["message"].startswith("placed by fabricfit")
    assert check["podSetUpdates"] == [
        {"name": "main", "labels": {"fabricfit.dev/topology": "train"}}
    ]
    # Kueue merged the flavor's node labels; fabricfit's pin is the required node affinity.
    for pod in pods.values():
        assert pod.spec.node_selector[POOL_LABEL] == "adm"
        assert not pod.spec.scheduling_gates
    report_latency("4 pods x 8 GPUs", workload, pods, wall)


def test_a_job_that_cannot_fit_gets_retry_with_what_fits_and_holds_nothing(
    kueue_operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "adm-small", rail_groups_per_spine=1, nodes_per_rail_group=4)
    # Kueue's quota admits 9 pods; the flavor's nodes hold only 4.
    with checked_queue(custom, namespace, "adm-small", gpus=128) as queue:
        uid = submit(custom, batch, namespace, "big", 9, queued_job("big", 9, "adm-small", queue))

        def retried() -> str | None:
            wl = kueue.workload_of(custom, namespace, uid) or {}
            entry = check_entry(wl, queue) or {}
            evicted = [
                c
                for c in wl.get("status", {}).get("conditions", [])
                if c["type"] == "Evicted" and c["reason"] == "AdmissionCheck"
            ]
            said = [entry.get("message", "")] + [c["message"] for c in evicted]
            return next((m for m in said if "largest job that fits now" in m), None)

        message = wait_for(retried, interval_seconds=0.1, what="fabricfit to answer Retry")
        assert "4 pods, 32 GPUs" in message
        tt = wait_condition(custom, namespace, "big", "Planned", "False")
        assert not tt["status"].get("reservation")
        assert core.list_namespaced_pod(namespace, label_selector="job-name=big").items == []
        wl = kueue.workload_of(custom, namespace, uid) or {}
        assert (check_state(wl, queue).get("retryCount") or 0) >= 1 or check_state(wl, queue)[
            "state"
        ] == "Retry"


def test_preemption_releases_the_reservation_and_the_preemptor_is_placed(
    kueue_operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    make_pool(core, "adm-pre", rail_groups_per_spine=1, nodes_per_rail_group=4)
    low, high = f"{namespace}-low", f"{namespace}-high"
    classes = [
        ("workloadpriorityclasses", priority_class(low, 100)),
        ("workloadpriorityclasses", priority_class(high, 1000)),
    ]
    with (
        cluster_objects(custom, classes),
        checked_queue(custom, namespace, "adm-pre", gpus=32, preempt=True) as queue,
    ):
        low_uid = submit(
            custom, batch, namespace, "low", 4, queued_job("low", 4, "adm-pre", queue, low)
        )
        kueue.wait_admitted(custom, namespace, low_uid)
        low_pods = wait_bound(core, namespace, "low", 4)
        assert_bound_as_planned(custom, namespace, "low", low_pods)

        started = time.monotonic()
        high_uid = submit(
            custom, batch, namespace, "high", 4, queued_job("high", 4, "adm-pre", queue, high)
        )
        high_wl = kueue.wait_admitted(custom, namespace, high_uid, timeout=120)
        high_pods = wait_bound(core, namespace, "high", 4)
        wall = time.monotonic() - started

        low_tt = read_topology(custom, namespace, "low")
        low_wl = kueue.workload_of(custom, namespace, low_uid) or {}

    assert_bound_as_planned(custom, namespace, "high", high_pods)
    # The preempted job's plan was released (its GPUs went to the preemptor) and it waits.
    assert low_tt["status"]["pods"] == [] and low_tt["status"]["reservation"] == []
    planned_cond = next(c for c in low_tt["status"]["conditions"] if c["type"] == "Planned")
    assert (planned_cond["status"], planned_cond["reason"]) == ("Unknown", "AdmissionReleased")
    assert "Preempted" in planned_cond["message"]
    evicted = [c for c in low_wl["status"]["conditions"] if c["type"] == "Evicted"]
    assert evicted and evicted[0]["reason"] == "Preempted"
    assert set(p.spec.node_name for p in high_pods.values()) == set(
        p.spec.node_name for p in low_pods.values()
    )  # the only four nodes: the preemptor got exactly the GPUs the preempted job held
    report_latency("preemptor, 4 pods x 8 GPUs (preemption included)", high_wl, high_pods, wall)


def test_the_kueue_sample_is_admitted_and_placed(
    kueue_operator: OperatorProcess, core: Any, custom: Any, kubectl: list[str], namespace: str
) -> None:
    docs = [d for d in yaml.safe_load_all(SAMPLE.read_text(encoding="utf-8")) if d]
    (flavor,) = [d for d in docs if d["kind"] == "ResourceFlavor"]
    pool = make_pool(core, "adm-sample", rail_groups_per_spine=1, nodes_per_rail_group=4)
    for node in pool:  # the sample's flavor selects nodes by its own labels
        core.patch_node(
            node["metadata"]["name"], {"metadata": {"labels": flavor["spec"]["nodeLabels"]}}
        )
    (job,) = [d for d in docs if d["kind"] == "Job"]
    cluster_scoped = [
        d for d in docs if d["kind"] in {"ResourceFlavor", "AdmissionCheck", "ClusterQueue"}
    ]
    apply = [*kubectl, "apply", "-n", namespace, "-f", str(SAMPLE)]
    try:
        subprocess.run(apply, check=True, capture_output=True, text=True)
        uid = batch_uid(kubectl, namespace, job["metadata"]["name"])
        kueue.wait_admitted(custom, namespace, uid)
        pods = wait_bound(core, namespace, job["metadata"]["name"], job["spec"]["completions"])
        (tt,) = [d for d in docs if d["kind"] == "TrainingTopology"]
        assert_bound_as_planned(custom, namespace, tt["metadata"]["name"], pods)
    finally:
        subprocess.run(
            [*kubectl, "delete", "-n", namespace, "--wait=false", "-f", str(SAMPLE)],
            capture_output=True,
            check=False,
        )
        for doc in cluster_scoped:
            wait_for(
                lambda d=doc: _gone(kubectl, d), timeout_seconds=90, what=f"{doc['kind']} deleted"
            )


def batch_uid(kubectl: list[str], namespace: str, name: str) -> str:
    out = subprocess.run(
        [*kubectl, "get", "job", name, "-n", namespace, "-o", "jsonpath={.metadata.uid}"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def _gone(kubectl: list[str], doc: Mapping[str, Any]) -> bool:
    kind = doc["kind"].lower() + "." + kueue.GROUP
    found = subprocess.run(
        [*kubectl, "get", kind, doc["metadata"]["name"]], capture_output=True, check=False
    )
    return found.returncode != 0
