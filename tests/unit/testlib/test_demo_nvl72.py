"""The demo's NVL72 racks: a pool and spine of their own, the job of whole trays that shows where
fabricfit beats Kueue TAS, and the reason the report derives from the two placements."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.placement import StepTimes, request_from_spec
from fabricfit.placement.quality import crosses_nvlink
from fabricfit.placement.search import plan_placement
from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.demo import workloads
from fabricfit_dev.demo.__main__ import plan_inputs
from fabricfit_dev.demo.baseline import JobView, PlacedJob, decision_for, view_job
from fabricfit_dev.demo.options import OptionError, from_env
from fabricfit_dev.demo.reason import devices_line, located, reason_lines
from fabricfit_dev.demo.report import job_lines
from fabricfit_dev.demo.workloads import NVL72_JOB, NVL72_POOL, POOL, POOL_LABEL

NATIVE = "topology.fabricfit.dev/"


def test_the_racks_follow_the_main_nodes_under_a_spine_and_pool_of_their_own() -> None:
    options = from_env({})
    racks = options.nvl72_fabric()
    assert racks is not None
    trays = fakenodes.node_manifests(racks)
    main = {m["metadata"]["name"] for m in fakenodes.node_manifests(options.fake_fabric())}
    labels = [t["metadata"]["labels"] for t in trays]
    assert len(trays) == 36 and not main & {t["metadata"]["name"] for t in trays}
    assert {x[POOL_LABEL] for x in labels} == {NVL72_POOL}
    assert {x[NATIVE + "spine"] for x in labels} == {"spine-2"}
    assert {x[NATIVE + "fabric"] for x in labels} == {"gb200-nvl72"}
    assert {t["status"]["allocatable"]["nvidia.com/gpu"] for t in trays} == {"4"}
    assert len({x[fakenodes.CLIQUE_LABEL] for x in labels}) == 2  # one NVLink domain per rack
    assert from_env({"FABRICFIT_DEMO_NVL72_RACKS": "0"}).nvl72_fabric() is None
    with pytest.raises(OptionError, match="FABRICFIT_DEMO_NVL72_RACKS must be between 0 and 8"):
        from_env({"FABRICFIT_DEMO_NVL72_RACKS": "9"})


def test_the_job_is_kept_to_the_racks_and_the_others_off_them() -> None:
    h100 = workloads.STANDARD[0]
    selector = ("spec", "template", "spec", "nodeSelector")
    assert _at(workloads.job_manifest(h100), selector) == {POOL_LABEL: POOL}
    assert _at(workloads.job_manifest(NVL72_JOB), selector) == {POOL_LABEL: NVL72_POOL}
    topology = workloads.topology_manifest(NVL72_JOB, "dgx-h100", "native")
    assert topology["spec"]["fabric"] == "gb200-nvl72"
    assert workloads.topology_manifest(h100, "dgx-h100", "native")["spec"]["fabric"] == "dgx-h100"
    assert NVL72_JOB.pods == 16 and NVL72_JOB.gpus_per_pod == 4  # whole trays


def test_the_inputs_add_the_racks_their_tenants_and_the_job() -> None:
    inputs = plan_inputs(from_env({}))
    assert inputs.jobs[-1] == NVL72_JOB and inputs.nvl72_trays == 36
    trays = {m["metadata"]["name"] for m in inputs.manifests[-36:]}
    on_trays = [t for t in inputs.tenants if t.node in trays]
    assert sum(t.gpus for t in on_trays) == round(workloads.NVL72_TENANT_SHARE * 36 * 4)
    assert len({t.name for t in inputs.tenants}) == len(inputs.tenants)
    without = plan_inputs(from_env({"FABRICFIT_DEMO_NVL72_RACKS": "0"}))
    assert NVL72_JOB not in without.jobs and len(without.manifests) == 64
    # Seed 13 leaves 5 + 11 trays: 16, but the racks hold 7 tensor groups of two trays.
    with pytest.raises(OptionError, match="each tensor group's in one rack, but other tenants "
                       "leave 5, 11 free in the racks"):  # fmt: skip
        plan_inputs(from_env({"FABRICFIT_DEMO_SEED": "13"}))
    assert workloads.room_in_racks([5, 11], NVL72_JOB) == 14
    assert workloads.room_in_racks([9, 12], NVL72_JOB) == 20


def test_on_the_default_racks_kueue_splits_a_tensor_group_and_the_report_says_why() -> None:
    view = _default_view()
    assert view.peer is not None and view.peer.predicted is not None
    assert view.planned.predicted is not None
    ranks = located(view.peer, view.snapshot), located(view.planned, view.snapshot)
    tensor = view.planned.groups["tensor"]
    split = [sum(crosses_nvlink(g, r) for g in tensor) for r in ranks]
    assert split == [1, 0]
    lines = "\n".join(job_lines(NVL72_JOB, view))
    ratio = view.peer.predicted.step_comm_seconds / view.planned.predicted.step_comm_seconds
    assert ratio > 2
    assert f"Kueue TAS is {ratio:.2f}× the communication time" in lines
    assert "why: 1 of Kueue TAS's 8 tensor groups spans 2 NVLink domains, none of fabricfit's" in (
        lines
    )
    assert re.search(r"why: \d+ of Kueue TAS's 16 data groups span 2 NVLink domains", lines)
    assert "GPUs: every pod takes all 4 GPUs of its node" in lines


def test_no_reason_for_a_tie_and_no_tier_claimed_that_does_not_differ() -> None:
    view = _default_view()
    planned = view.planned
    assert reason_lines(planned, planned, view.snapshot, "Kueue TAS") == []
    assert planned.predicted is not None
    slower = StepTimes(
        planned.predicted.step_comm_seconds * 2,
        {k: v * 2 for k, v in planned.predicted.by_dimension.items()},
    )
    lines = reason_lines(planned, replace(planned, predicted=slower), view.snapshot, "Kueue TAS")
    assert len(lines) == 2  # at most two dimensions, the costliest first
    assert (
        lines[0].startswith("why: tensor ")
        and "as many tensor groups across each tier" in (lines[0])
    )


def test_pods_smaller_than_their_node_say_their_gpus_are_not_enforced() -> None:
    nodes = [fakenodes.as_ready(m) for m in fakenodes.node_manifests(fakenodes.FakeFabric())]
    snapshot = build_snapshot(nodes, [], scheme="native")
    moe = workloads.SMALL[1]
    decision = decision_for(["gpu-s0-g0-n0000"] * 2 + ["gpu-s0-g0-n0001"] * 2, snapshot,
                            _spec(moe, "dgx-h100"))  # fmt: skip
    line = devices_line(decision, snapshot, moe.gpus_per_pod)
    assert line.startswith("GPUs: 4-GPU pods on 8-GPU nodes") and "(not enforced)" in line


def _default_view() -> JobView:
    """The NVL72 job on the default demo's racks and tenants: fabricfit's plan against the
    Kueue TAS emulation, as the demo reports it."""
    inputs = plan_inputs(from_env({}))
    nodes = [fakenodes.as_ready(m) for m in inputs.manifests if _pool(m) == NVL72_POOL]
    pods = [_running(workloads.tenant_manifest(t), t.node) for t in inputs.tenants]
    spec = _spec(NVL72_JOB, "gb200-nvl72")
    snapshot = build_snapshot(nodes, pods, scheme="native")
    plan = plan_placement(snapshot, request_from_spec(spec), get_profile("gb200-nvl72"))
    assert plan.predicted is not None and plan.lower_bound is not None
    status = {
        "lowerBoundSeconds": plan.lower_bound.step_comm_seconds,
        "predicted": {"stepCommSeconds": plan.predicted.step_comm_seconds,
                      "byDimension": dict(plan.predicted.by_dimension)},
    }  # fmt: skip
    placed = PlacedJob(NVL72_JOB.name, "ns", spec, status, list(plan.pods), "nvlink_domain")
    return view_job(placed, nodes, pods)


def _spec(job: workloads.DemoJob, fabric: str) -> TrainingTopologySpec:
    return TrainingTopologySpec.model_validate(
        workloads.topology_manifest(job, fabric, "native")["spec"]
    )


def _pool(manifest: dict[str, Any]) -> str:
    return str(manifest["metadata"]["labels"][POOL_LABEL])


def _running(pod: dict[str, Any], node: str) -> dict[str, Any]:
    pod["metadata"]["namespace"] = "other-tenants"
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def _at(body: dict[str, Any], path: tuple[str, ...]) -> Any:
    for key in path:
        body = body[key]
    return body
