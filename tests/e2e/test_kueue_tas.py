"""``kueue-tas`` mode against the real Kueue: fabricfit writes the TAS annotations, Kueue admits
the Job with a TopologyAssignment, its TopologyUngater steers each pod, kube-scheduler binds it,
and the nodes read back from the pods satisfy the constraint fabricfit asked for.

The Kueue Topology's levels are fabricfit's native tier labels (spine, rail group, rack, NVLink
domain, hostname), the ResourceFlavor selects the test's node pool and names that Topology.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from fabricfit_dev.e2e import kueue
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    TT,
    foreign_pod,
    indexed_job,
    make_pool,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

pytestmark = pytest.mark.controllers("kueue")

REQUIRED = "kueue.x-k8s.io/podset-required-topology"
SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"


def _annotations(batch: Any, namespace: str, job: str) -> dict[str, str]:
    def written() -> dict[str, str] | None:
        template = batch.read_namespaced_job(job, namespace).spec.template
        found = dict(template.metadata.annotations or {})
        return found if any(k.startswith("kueue.x-k8s.io/podset-") for k in found) else None

    return wait_for(written, what=f"fabricfit's Kueue annotations on {job}")


def test_kueue_tas_keeps_the_job_in_the_domain_fabricfit_required(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    # Two rail groups of four 8-GPU nodes, racks and NVLink domains of two nodes each. Another
    # tenant holds a node of the first rail group, so only the second can take four pods.
    nodes = make_pool(core, "tas", rail_groups_per_spine=2, nodes_per_rail_group=4,
                      nodes_per_rack=2, nvlink_domain_nodes=2)  # fmt: skip
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    busy = nodes[0]["metadata"]["name"]
    core.create_namespaced_pod(namespace, foreign_pod("tenant", busy, 8))
    wait_for(lambda: core.read_namespaced_pod("tenant", namespace).status.phase == "Running",
             what="the other tenant's pod to run")  # fmt: skip

    with kueue.queues(custom, namespace, namespace, {POOL_LABEL: "tas"}, gpus=64) as queue:
        batch.create_namespaced_job(namespace, indexed_job("train", 4, "tas"))
        spec = topology("train", "train", {"tensor": 16, "data": 2}, queueName=queue,
                        placement={"mode": "kueue-tas"})  # fmt: skip
        custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
        wait_condition(custom, namespace, "train", "Planned", "True")

        annotations = _annotations(batch, namespace, "train")
        level = annotations[REQUIRED]
        assert level in kueue.NATIVE_LEVELS
        # TP16 on 8-GPU pods: each pair of consecutive ranks is one NVLink slice.
        assert annotations[SLICE_LEVEL] == kueue.NATIVE + "nvlink-domain"
        assert annotations[SLICE_SIZE] == "2"

        uid = batch.read_namespaced_job("train", namespace).metadata.uid
        workload = kueue.wait_admitted(custom, namespace, uid)
        pods = wait_bound(core, namespace, "train", 4)

    placed = {index: pod.spec.node_name for index, pod in pods.items()}
    # Kueue's decision, read from the Workload, is where kube-scheduler bound the pods.
    (assignment,) = kueue.podset_assignments(workload).values()
    topo = assignment["topologyAssignment"]
    assert topo["levels"] == [kueue.HOSTNAME]
    assert kueue.assignment_counts(topo) == {(n,): c for n, c in Counter(placed.values()).items()}
    assert all(pods[i].spec.node_selector[kueue.HOSTNAME] == placed[i] for i in placed)
    # The constraint held: one domain at the required level, each TP pair in one NVLink domain.
    assert busy not in placed.values()
    assert len({kueue.domain_of(labels[n], level) for n in placed.values()}) == 1
    nvlink = kueue.NATIVE + "nvlink-domain"
    for first in (0, 2):
        pair = {kueue.domain_of(labels[placed[i]], nvlink) for i in (first, first + 1)}
        assert len(pair) == 1, f"ranks {first},{first + 1} split across NVLink domains: {placed}"


def test_a_job_spanning_rail_groups_gets_a_multi_layer_slice_request_kueue_honours(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    # Eight TP16 pods on two rail groups of four: no rail group holds the job, so fabricfit asks
    # for the spine, with every block of four consecutive ranks in one rail group and every TP
    # pair in one NVLink domain (one multi-layer slice request).
    nodes = make_pool(core, "layers", rail_groups_per_spine=2, nodes_per_rail_group=4,
                      nodes_per_rack=2, nvlink_domain_nodes=2)  # fmt: skip
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    with kueue.queues(custom, namespace, namespace, {POOL_LABEL: "layers"}, gpus=64) as queue:
        batch.create_namespaced_job(namespace, indexed_job("wide", 8, "layers"))
        spec = topology("wide", "wide", {"tensor": 16, "data": 4}, queueName=queue,
                        placement={"mode": "kueue-tas"})  # fmt: skip
        custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
        annotations = _annotations(batch, namespace, "wide")
        assert annotations[REQUIRED] == kueue.NATIVE + "spine"
        assert json.loads(annotations[CONSTRAINTS]) == [
            {"topology": kueue.NATIVE + "rail-group", "size": 4},
            {"topology": kueue.NATIVE + "nvlink-domain", "size": 2},
        ]
        uid = batch.read_namespaced_job("wide", namespace).metadata.uid
        kueue.wait_admitted(custom, namespace, uid)
        pods = wait_bound(core, namespace, "wide", 8)

    placed = {index: pod.spec.node_name for index, pod in pods.items()}
    for level, size in ((kueue.NATIVE + "rail-group", 4), (kueue.NATIVE + "nvlink-domain", 2)):
        for first in range(0, 8, size):
            block = {kueue.domain_of(labels[placed[i]], level) for i in range(first, first + size)}
            assert len(block) == 1, f"ranks {first}..{first + size - 1} split at {level}: {placed}"
