"""The lower bound assumes only the nodes a job may use: a larger NVLink domain elsewhere in the
cluster, which the job's nodeSelector keeps it off, must not make its best plan look worse."""

from __future__ import annotations

from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.placement import plan_placement, request_from_spec
from fabricfit_dev.cluster import fakenodes

POOL = fakenodes.POOL_LABEL


def ready(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    conditions = [{"type": "Ready", "status": "True"}]
    return [{**m, "status": {**m["status"], "conditions": conditions}} for m in manifests]


def test_a_bigger_nvlink_domain_the_job_cannot_use_leaves_its_bound_alone() -> None:
    hgx = fakenodes.FakeFabric(
        prefix="h", pool="h", rail_groups_per_spine=1, nodes_per_rail_group=4
    )
    racks = fakenodes.FakeFabric(
        prefix="t", pool="t", rail_groups_per_spine=1, nodes_per_rail_group=18,
        gpus_per_node=4, nics_per_node=4, nvlink_domain_nodes=18, fabric="gb200-nvl72",
    )  # fmt: skip
    nodes = ready(fakenodes.node_manifests(hgx) + fakenodes.node_manifests(racks))
    snapshot = build_snapshot(nodes, [], scheme="native", default_fabric="dgx-h100")
    spec = TrainingTopologySpec.model_validate(
        {"gpusPerPod": 8, "parallelism": {"tensor": 8, "data": 4}}
    )
    template = {"spec": {"nodeSelector": {POOL: "h"}, "containers": [{"name": "c"}]}}
    decision = plan_placement(snapshot, request_from_spec(spec, template), get_profile("dgx-h100"))
    assert decision.feasible and {n[:1] for n in decision.pods} == {"h"}
    # Four whole HGX nodes of one rail group are the best this job can have: efficiency 1, not
    # the ratio to a DP ring inside a 72-GPU NVLink rack the selector keeps it off.
    assert decision.efficiency > 0.999
