"""Operator metrics: names and conventions (promtool), per-job series, the handler observer."""

from __future__ import annotations

import asyncio
import copy
import shutil
import ssl
import subprocess
import urllib.request
from collections import Counter
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from fabricfit.api.conditions import Reason
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.profiles import get_profile
from fabricfit.kube.rest import Credentials, Rest
from fabricfit.metrics import EXPORTED_NAMES, OperatorMetrics
from fabricfit.placement import plan_placement, request_from_spec
from fabricfit.placement.quality import PlanQuality, decision_quality, measure_fragmentation
from fabricfit.reconcile.context import OperatorConfig, OperatorState, Views
from fabricfit.reconcile.draft import Transition
from fabricfit.reconcile.inventory import slim_node, take_snapshot
from fabricfit.reconcile.observe import Observer, seconds_since, timed
from fabricfit.reconcile.service import Outcome
from fabricfit.render.status import build_plan_status, reservation_of
from fabricfit_dev.cluster import fakenodes

JOB = ("team-a", "llama")
RAIL = "topology.fabricfit.dev/rail-group"
STATUS: dict[str, Any] = {
    "pods": [{"index": i, "node": f"m-{i}"} for i in range(2)],
    "predicted": {
        "stepCommSeconds": 0.5,
        "byDimension": {"tensor": 0.3, "data": 0.2, "pipeline": 0.0, "expert": 0.0, "context": 0},
        "aloneStepCommSeconds": 0.45,
        "neighbourSlowdownSeconds": 0.05,
        "slowdownAddedToOthersSeconds": 0.02,
    },
    "lowerBoundSeconds": 0.4,
    "efficiency": 0.8,
    "fabric": "dgx-h100",
}


def samples(metrics: OperatorMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(metrics: OperatorMetrics, metric: str, /, **labels: str) -> float | None:
    return samples(metrics).get((metric, tuple(sorted(labels.items()))))


def names_of(metrics: OperatorMetrics, name: str) -> list[dict[str, str]]:
    return [dict(labels) for (n, labels) in samples(metrics) if n == name]


def filled_metrics() -> OperatorMetrics:
    metrics = OperatorMetrics(
        CollectorRegistry(), api_requests=lambda: Counter({("PATCH", "pods", 200): 3})
    )
    metrics.set_version("0.1.0")
    metrics.set_job(JOB, STATUS)
    metrics.set_quality(JOB, PlanQuality(4, 1, 8, 2, 1.5e9), {"tensor": 4, "data": 8})
    metrics.count_plan("made", "Planned")
    metrics.count_plan("failed", "InsufficientGPUs")
    metrics.count_pins(2)
    metrics.observe_placed("uid-1", 12.0)
    metrics.observe_handler("reconcile", 0.02, None)
    metrics.observe_handler("reconcile", 0.03, RuntimeError("boom"))
    snapshot = take_snapshot(
        [_ready(n) for n in fakenodes.node_manifests(fakenodes.FakeFabric(prefix="m"))],
        [],
        scheme="auto",
        default_fabric="dgx-h100",
    )
    metrics.set_fragmentation(measure_fragmentation(snapshot))
    metrics.set_link_utilisation({("leaf", "spine-0/rg-0"): 0.7, ("spine", "spine-0"): 0.2})
    return metrics


def _ready(node: dict[str, Any]) -> dict[str, Any]:
    node = dict(node)
    node["status"] = {**node["status"], "conditions": [{"type": "Ready", "status": "True"}]}
    return slim_node(node)


def test_every_exported_name_is_exposed_with_help_and_counters_end_in_total() -> None:
    metrics = filled_metrics()
    text = generate_latest(metrics.registry).decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in EXPORTED_NAMES:
        base = name.removesuffix("_total")
        assert base in families, name
        assert families[base].documentation, name
    for family in families.values():
        assert family.name.startswith("fabricfit_")
        if family.type == "counter":
            assert all(s.name.endswith(("_total", "_created")) for s in family.samples), family.name
    assert set(EXPORTED_NAMES) >= {
        s.name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
        for f in families.values()
        for s in f.samples
        if not s.name.endswith("_created")
    }


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool is missing: run hack/tools.sh (make test does)"
    return found


def test_promtool_accepts_the_exposition() -> None:
    text = generate_latest(filled_metrics().registry)
    result = subprocess.run(
        [promtool(), "check", "metrics"], input=text, capture_output=True, check=False
    )
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()


def test_promtool_would_flag_a_bad_name() -> None:
    """The check above can fail: a counter without _total and an abbreviated unit are flagged."""
    bad = b"# HELP fabricfit_solve_ms x\n# TYPE fabricfit_solve_ms counter\nfabricfit_solve_ms 1\n"
    result = subprocess.run(
        [promtool(), "check", "metrics"], input=bad, capture_output=True, check=False
    )
    assert result.returncode != 0


def test_job_series_carry_the_status_and_vanish_with_the_job() -> None:
    metrics = filled_metrics()
    assert (
        value(metrics, "fabricfit_placement_efficiency_ratio", namespace="team-a", name="llama")
        == 0.8
    )
    assert value(
        metrics,
        "fabricfit_predicted_step_comm_seconds",
        namespace="team-a",
        name="llama",
        dimension="tensor",
    ) == pytest.approx(0.3)
    assert (
        value(metrics, "fabricfit_step_spine_crossing_bytes", namespace="team-a", name="llama")
        == 1.5e9
    )
    assert (
        value(
            metrics,
            "fabricfit_tensor_groups_crossing_nvlink_domain",
            namespace="team-a",
            name="llama",
        )
        == 1
    )
    metrics.forget_job(JOB)
    left = [key for key in samples(metrics) if ("name", "llama") in key[1]]
    assert left == []
    assert metrics.jobs() == set()


def test_a_status_without_a_plan_removes_the_job() -> None:
    metrics = filled_metrics()
    metrics.set_job(JOB, {"pods": [], "predicted": None})
    assert names_of(metrics, "fabricfit_placement_efficiency_ratio") == []
    metrics.set_quality(JOB, PlanQuality(1, 0, 1, 0, 0.0), {})  # ignored: not a live job
    assert names_of(metrics, "fabricfit_step_spine_crossing_bytes") == []


def test_time_to_placed_is_observed_once_per_object() -> None:
    metrics = OperatorMetrics(CollectorRegistry())
    assert metrics.observe_placed("u", 3.0)
    assert not metrics.observe_placed("u", 30.0)
    assert value(metrics, "fabricfit_time_to_placed_seconds_count") == 1
    assert value(metrics, "fabricfit_time_to_placed_seconds_sum") == 3.0


def test_api_requests_come_from_the_rest_counter_at_scrape_time() -> None:
    counts: Counter[tuple[str, str, int]] = Counter()
    metrics = OperatorMetrics(CollectorRegistry(), api_requests=lambda: counts)
    assert names_of(metrics, "fabricfit_kubernetes_api_requests_total") == []
    counts[("GET", "jobs", 404)] += 2
    assert (
        value(
            metrics,
            "fabricfit_kubernetes_api_requests_total",
            verb="GET",
            resource="jobs",
            code="404",
        )
        == 2
    )


def test_fragmentation_series_per_tier_and_pod_size() -> None:
    metrics = filled_metrics()
    assert value(metrics, "fabricfit_free_gpus") == 256
    assert value(metrics, "fabricfit_largest_placeable_gpus", tier="rail_group") == 128
    assert value(metrics, "fabricfit_largest_placeable_pods", tier="node", gpus_per_pod="8") == 1
    assert value(metrics, "fabricfit_free_domains", tier="spine") == 1


def test_registries_are_isolated() -> None:
    first, second = OperatorMetrics(CollectorRegistry()), OperatorMetrics(CollectorRegistry())
    first.count_pins(5)
    assert value(first, "fabricfit_pods_pinned_total") == 5
    assert value(second, "fabricfit_pods_pinned_total") == 0


def test_serve_exposes_the_registry_over_http() -> None:
    metrics = filled_metrics()
    server, thread = metrics.serve(0, "127.0.0.1")
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            body = resp.read().decode()
        assert "fabricfit_placement_efficiency_ratio{" in body
    finally:
        server.shutdown()
        thread.join(timeout=5)


# -- the observer the handlers call --------------------------------------------------------


def _state() -> OperatorState:
    rest = Rest(Credentials("https://127.0.0.1:1", ssl.create_default_context()))
    return OperatorState(config=OperatorConfig(), rest=rest)


def _views(topologies: Any = None) -> Views:
    nodes = [_ready(n) for n in fakenodes.node_manifests(fakenodes.FakeFabric(prefix="m"))]
    return Views(nodes=nodes, pods=[], topologies=topologies or {})


def _body(status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": JOB[0],
            "name": JOB[1],
            "uid": "u-1",
            "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "llama"},
            "gpusPerPod": 8,
            "parallelism": {"tensor": 8, "data": 2},
        },
        "status": status or {},
    }


def _outcome(**fields: Any) -> Outcome:
    """An Outcome as the reconcile returns it for _body(): with the spec it parsed."""
    return Outcome(spec=TrainingTopologySpec.model_validate(_body()["spec"]), **fields)


def _placed_status(nodes: list[str], **facts: Any) -> dict[str, Any]:
    """A recorded plan of _body()'s job (tp 8 x dp 2) with the fabric facts ``facts``."""
    groups = {"tensor": 2, "context": 16, "expert": 16, "data": 8, "pipeline": 16}
    return {
        **STATUS,
        "predicted": {**STATUS["predicted"], "groups": groups, **facts},
        "pods": [{"index": i, "node": n} for i, n in enumerate(nodes)],
        "conditions": [{"type": "Planned", "status": "True", "reason": "Planned"}],
    }


def _facts(crossing: int, spine: float) -> dict[str, Any]:
    return {
        "spineBytesPerStep": spine,
        "tensorGroupsCrossingNvlink": 0,
        "dataGroupsCrossingRailGroup": crossing,
    }


def test_observer_counts_a_plan_once_and_reads_its_quality_off_the_record() -> None:
    metrics = OperatorMetrics(CollectorRegistry())
    observer = Observer(metrics, _state())
    same_rg = _placed_status(["m-s0-g0-n0000", "m-s0-g0-n0001"], **_facts(0, 0.0))
    outcome = _outcome(
        transitions=(
            Transition(Reason.PLANNED, "ok"),
            Transition(Reason.ALL_PODS_BOUND, "ok"),
        ),
        status=same_rg,
        pinned=2,
    )
    observer.after_reconcile(_body(), outcome)
    observer.after_reconcile(_body(same_rg), _outcome(status=same_rg))  # resync
    assert value(metrics, "fabricfit_plans_total", result="made", reason="Planned") == 1
    assert value(metrics, "fabricfit_pods_pinned_total") == 2
    assert value(metrics, "fabricfit_time_to_placed_seconds_count") == 1
    job = {"namespace": JOB[0], "name": JOB[1]}
    assert value(metrics, "fabricfit_data_groups_crossing_rail_group", **job) == 0
    assert value(metrics, "fabricfit_parallel_groups", **job, dimension="data") == 8

    # Re-placed, or found after a restart: the record says what the plan is; nothing is priced
    # (these nodes are in no cluster the observer could price them on).
    moved = _placed_status(["gone-0", "gone-1"], **_facts(8, 3.5e9))
    observer.after_reconcile(_body(same_rg), _outcome(status=moved))
    assert value(metrics, "fabricfit_plans_total", result="made", reason="Planned") == 2
    assert value(metrics, "fabricfit_data_groups_crossing_rail_group", **job) == 8
    assert value(metrics, "fabricfit_step_spine_crossing_bytes", **job) == 3.5e9
    restarted = Observer(OperatorMetrics(CollectorRegistry()), _state())
    restarted.after_reconcile(_body(moved), _outcome(status=moved))
    assert value(restarted.metrics, "fabricfit_step_spine_crossing_bytes", **job) == 3.5e9

    older = _placed_status(["m-s0-g0-n0000", "m-s0-g0-n0001"])  # no fabric facts recorded
    observer.after_reconcile(_body(moved), _outcome(status=older))
    assert names_of(metrics, "fabricfit_step_spine_crossing_bytes") == []
    assert value(metrics, "fabricfit_parallel_groups", **job, dimension="data") == 8

    observer.after_release(_body(moved))
    assert names_of(metrics, "fabricfit_parallel_groups") == []


def test_a_plan_the_operator_records_reads_back_as_the_planner_priced_it() -> None:
    """From decision to status to metrics: the gauges are the decision's own quality."""
    metrics = OperatorMetrics(CollectorRegistry())
    views = _views()
    snapshot = take_snapshot(views.nodes, [], scheme="auto", default_fabric="dgx-h100")
    spec = _outcome().spec
    assert spec is not None
    decision = plan_placement(snapshot, request_from_spec(spec), get_profile("dgx-h100"))
    quality = decision_quality(snapshot, decision)
    assert quality is not None
    status = {
        **build_plan_status(
            decision, spec=spec, reservation=reservation_of(decision, 8), generation=1,
            snapshot=snapshot,
        ),
        "conditions": [{"type": "Planned", "status": "True", "reason": "Planned"}],
    }  # fmt: skip
    Observer(metrics, _state()).after_reconcile(_body(), _outcome(status=status))
    job = {"namespace": JOB[0], "name": JOB[1]}
    assert value(metrics, "fabricfit_step_spine_crossing_bytes", **job) == (
        quality.spine_bytes_per_step
    )
    assert value(metrics, "fabricfit_data_groups_crossing_rail_group", **job) == (
        quality.data_groups_crossing_rail_group
    )
    assert value(metrics, "fabricfit_parallel_groups", **job, dimension="tensor") == 2


def test_observer_counts_failures_by_reason_on_transition_only() -> None:
    metrics = OperatorMetrics(CollectorRegistry())
    observer = Observer(metrics, _state())
    failed = _outcome(transitions=(Transition(Reason.INSUFFICIENT_GPUS, "no"),))
    observer.after_reconcile(_body(), failed)
    observer.after_reconcile(_body(), _outcome())
    assert value(metrics, "fabricfit_plans_total", result="failed", reason="InsufficientGPUs") == 1
    assert metrics.jobs() == set()


def test_census_measures_fragmentation_and_drops_vanished_jobs() -> None:
    metrics = OperatorMetrics(CollectorRegistry())
    observer = Observer(metrics, _state())
    metrics.set_job(JOB, STATUS)
    observer.census(_views())
    assert value(metrics, "fabricfit_schedulable_gpus") == 256
    assert value(metrics, "fabricfit_nodes_without_topology") == 0  # fake nodes carry tiers
    assert metrics.jobs() == set()
    assert names_of(metrics, "fabricfit_placement_efficiency_ratio") == []
    bare = _views()
    bare.nodes[0]["metadata"]["labels"] = {}
    cpu_only = copy.deepcopy(bare.nodes[1])  # no tier label and no GPU: nothing to place there
    cpu_only["metadata"] = {"name": "cpu-0", "labels": {}}
    for section in ("allocatable", "capacity"):
        cpu_only["status"][section] = {"cpu": "64", "memory": "256Gi"}
    bare.nodes.append(cpu_only)
    observer.census(bare)
    assert value(metrics, "fabricfit_nodes_without_topology") == 1


def test_neighbour_figures_per_job_follow_the_status() -> None:
    metrics = filled_metrics()
    job = {"namespace": "team-a", "name": "llama"}
    assert value(metrics, "fabricfit_neighbour_slowdown_seconds", **job) == 0.05
    assert value(metrics, "fabricfit_slowdown_added_to_others_seconds", **job) == 0.02
    alone = {**STATUS, "predicted": {"stepCommSeconds": 0.5}}  # planned with nobody running
    metrics.set_job(JOB, alone)
    assert names_of(metrics, "fabricfit_neighbour_slowdown_seconds") == []


def test_link_utilisation_is_one_series_per_place_capped_to_the_busiest() -> None:
    from fabricfit.metrics import MAX_LINK_PLACES

    metrics = OperatorMetrics(CollectorRegistry())
    many = {("leaf", f"rg-{i:04d}"): i / 1000 for i in range(MAX_LINK_PLACES + 50)}
    metrics.set_link_utilisation(many)
    series = names_of(metrics, "fabricfit_link_utilisation_ratio")
    assert len(series) == MAX_LINK_PLACES
    assert {"class": "leaf", "place": f"rg-{MAX_LINK_PLACES + 49:04d}"} in series
    assert {"class": "leaf", "place": "rg-0000"} not in series  # the quietest are left out
    metrics.set_link_utilisation({("spine", "spine-1"): 1.5})
    assert names_of(metrics, "fabricfit_link_utilisation_ratio") == [
        {"class": "spine", "place": "spine-1"}
    ]


def test_census_exports_the_busiest_link_of_each_rail_group_a_running_job_loads() -> None:
    from fabricfit.reconcile.inventory import holding_of

    metrics = OperatorMetrics(CollectorRegistry())
    observer = Observer(metrics, _state())
    views = _views()
    nodes = [n["metadata"]["name"] for n in views.nodes]
    groups = {n["metadata"]["name"]: n["metadata"]["labels"][RAIL] for n in views.nodes}
    # Two nodes of one rail group and one of the other: the job's ring climbs both leaves.
    first = [n for n in nodes if groups[n] == groups[nodes[0]]][:2]
    other = next(n for n in nodes if groups[n] != groups[nodes[0]])
    body = {
        "metadata": {"namespace": "ns", "name": "big", "generation": 1, "resourceVersion": "3"},
        "spec": {"gpusPerPod": 8, "parallelism": {"tensor": 8, "data": 3},
                 "model": {"parameters": 20_000_000_000, "sequenceLength": 256,
                           "microBatches": 1}},
        "status": {"pods": [{"index": i, "node": n} for i, n in enumerate([*first, other])],
                   "predicted": {"stepCommSeconds": 0.3}, "fabric": "h100-leaf-spine-2to1"},
    }  # fmt: skip
    views.topologies = {("ns", "big"): holding_of(body)}
    observer.census(views)
    loaded = names_of(metrics, "fabricfit_link_utilisation_ratio")
    assert {d["class"] for d in loaded} == {"leaf"}
    assert len(loaded) == 2  # one per rail group, not per node or rail
    assert all((value(metrics, "fabricfit_link_utilisation_ratio", **d) or 0) > 0 for d in loaded)
    views.topologies = {}
    observer.census(views)
    assert names_of(metrics, "fabricfit_link_utilisation_ratio") == []
    # While a plan is being made (it syncs the link load off the event loop), the census
    # leaves the load alone: the gauges keep what the last census said.
    views.topologies = {("ns", "big"): holding_of(body)}
    asyncio.run(_census_while_planning(observer, views))
    assert names_of(metrics, "fabricfit_link_utilisation_ratio") == []


async def _census_while_planning(observer: Observer, views: Views) -> None:
    async with observer.state.plan_lock:
        observer.census(views)


def test_timed_records_duration_and_error_type() -> None:
    metrics = OperatorMetrics(CollectorRegistry())
    with timed(metrics, "pin"):
        pass
    with pytest.raises(KeyError), timed(metrics, "pin"):
        raise KeyError("x")
    assert value(metrics, "fabricfit_reconcile_duration_seconds_count", handler="pin") == 2
    assert value(metrics, "fabricfit_reconcile_errors_total", handler="pin", error="KeyError") == 1


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [("2026-01-01T00:00:10Z", 50.0), ("2026-01-01T00:01:00+00:00", 0.0), ("", None), ("x", None)],
)
def test_seconds_since(stamp: str, expected: float | None) -> None:
    from datetime import UTC, datetime

    assert seconds_since(stamp, datetime(2026, 1, 1, 0, 1, tzinfo=UTC)) == expected


@pytest.mark.parametrize(
    ("port", "ok"), [("0", True), ("9090", True), ("-1", False), ("70000", False)]
)
def test_run_metrics_port_flag(port: str, ok: bool) -> None:
    from fabricfit.cli.common import Parser, UsageError
    from fabricfit.cli.run import configure, execute

    parser = Parser(prog="fabricfit run")
    configure(parser)
    assert parser.parse_args([]).metrics_port == 9090
    args = parser.parse_args(["--metrics-port", port, "--resync-seconds", "0"])
    with pytest.raises(UsageError) as err:
        execute(args)  # stops at flag validation, before kopf starts
    assert ("--metrics-port" in str(err.value)) is not ok


def test_a_served_models_phases_are_gauges_and_a_training_job_has_none() -> None:
    metrics = filled_metrics()
    assert names_of(metrics, "fabricfit_predicted_decode_token_comm_seconds") == []
    served = {**STATUS, "predicted": {**STATUS["predicted"], "decodeTokenCommSeconds": 0.004,
                                      "kvTransferSeconds": 0.002}}  # fmt: skip
    metrics.set_job(JOB, served)
    labels = {"namespace": "team-a", "name": "llama"}
    assert value(metrics, "fabricfit_predicted_decode_token_comm_seconds", **labels) == 0.004
    assert value(metrics, "fabricfit_predicted_kv_transfer_seconds", **labels) == 0.002
    assert names_of(metrics, "fabricfit_predicted_prefill_comm_seconds") == []  # a decode side
    metrics.set_job(JOB, STATUS)  # the spec went back to training: the series go
    assert names_of(metrics, "fabricfit_predicted_decode_token_comm_seconds") == []
    metrics.set_job(JOB, served)
    metrics.forget_job(JOB)
    assert names_of(metrics, "fabricfit_predicted_kv_transfer_seconds") == []


def test_who_picks_the_gpus_is_a_per_job_gauge() -> None:
    metrics = filled_metrics()
    gauge = "fabricfit_gpu_choice_enforced"
    assert names_of(metrics, gauge) == []  # a status that does not say: no series
    metrics.set_job(JOB, {**STATUS, "gpuChoice": "not-enforced"})
    assert value(metrics, gauge, namespace="team-a", name="llama") == 0.0
    metrics.set_job(JOB, {**STATUS, "gpuChoice": "enforced"})
    assert value(metrics, gauge, namespace="team-a", name="llama") == 1.0
    metrics.forget_job(JOB)
    assert names_of(metrics, gauge) == []
