"""Status bodies from decisions: expected dicts, accepted by the pydantic status model."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.models import Parallelism, TrainingTopologySpec
from fabricfit.api.status import TrainingTopologyStatus
from fabricfit.api.statusbase import MAX_REASONS
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement import plan_placement, request_from_spec
from fabricfit.placement.decision import LargestFit, PlacementDecision, StepTimes
from fabricfit.placement.layout import build_layout
from fabricfit.placement.quality import decision_quality
from fabricfit.placement.spares import SpareSet
from fabricfit.reconcile.inventory import slim_node, take_snapshot
from fabricfit.render.status import (
    build_plan_status,
    format_percent,
    format_seconds,
    reservation_of,
    spares_fields,
    timestamp,
)
from fabricfit_dev.cluster import fakenodes

SPEC = TrainingTopologySpec.model_validate(
    {
        "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "llama"},
        "gpusPerPod": 8,
        "parallelism": {"tensor": 8, "pipeline": 2, "data": 2},
    }
)
GROUPS = build_layout(Parallelism(tensor=8, pipeline=2, data=2), 8, "tp-cp-ep-dp-pp").groups
PLACED = PlacementDecision(
    feasible=True,
    fabric="dgx-h100",
    groups=GROUPS,
    pods=("n1", "n0", "n1", "n2"),
    predicted=StepTimes(0.02, {"tensor": 0.015, "data": 0.004, "pipeline": 0.001, "bogus": 9.0}),
    lower_bound=StepTimes(0.016),
    reasons=("1 of 8 data-parallel groups span more than one rail group",),
)
INFEASIBLE = PlacementDecision(
    feasible=False,
    fabric="dgx-h100",
    groups=GROUPS,
    reasons=("needs 32 free GPUs in 4 nodes; 16 free",),
    largest_feasible=LargestFit(pods=2, world_size=16, data=1),
)


def test_reservation_counts_pods_per_node() -> None:
    assert reservation_of(PLACED, 8) == {"n0": 8, "n1": 16, "n2": 8}
    assert list(reservation_of(PLACED, 8)) == ["n0", "n1", "n2"]
    assert reservation_of(INFEASIBLE, 8) == {}


def test_placed_status() -> None:
    body = build_plan_status(
        PLACED,
        spec=SPEC,
        reservation=reservation_of(PLACED, 8),
        generation=4,
        planned_at="2026-12-02T10:00:00Z",
    )
    assert body == {
        "observedGeneration": 4,
        "workload": "Job/llama",
        "worldSize": 32,
        "gpusPerPod": 8,
        "gpuChoice": "not-enforced",
        "pods": [
            {"index": 0, "node": "n1"},
            {"index": 1, "node": "n0"},
            {"index": 2, "node": "n1"},
            {"index": 3, "node": "n2"},
        ],
        "reservation": [
            {"node": "n0", "gpus": 8},
            {"node": "n1", "gpus": 16},
            {"node": "n2", "gpus": 8},
        ],
        "predicted": {
            "stepCommSeconds": 0.02,
            "byDimension": {
                "tensor": 0.015,
                "context": 0.0,
                "expert": 0.0,
                "data": 0.004,
                "pipeline": 0.001,
            },
            "groups": {"tensor": 4, "context": 32, "expert": 32, "data": 16, "pipeline": 16},
            "spineBytesPerStep": None,
            "tensorGroupsCrossingNvlink": None,
            "dataGroupsCrossingRailGroup": None,
            "aloneStepCommSeconds": None,
            "neighbourSlowdownSeconds": None,
            "slowdownAddedToOthersSeconds": None,
        },
        "lowerBoundSeconds": 0.016,
        "efficiency": 0.8,
        "stepComm": "20ms",
        "lowerBound": "16ms",
        "efficiencyPercent": "80%",
        "reasons": ["1 of 8 data-parallel groups span more than one rail group"],
        "fabric": "dgx-h100",
        "labelScheme": None,
        "plannedAt": "2026-12-02T10:00:00Z",
        "spares": None,
    }
    model = TrainingTopologyStatus.model_validate(body)
    written = model.to_body()
    predicted = {k: v for k, v in body["predicted"].items() if v is not None}
    expected = {k: v for k, v in body.items() if v is not None}  # None: nothing written
    assert {k: v for k, v in written.items() if k != "summary"} == {
        **expected,
        "predicted": predicted,
    }


def test_a_plan_priced_next_to_running_jobs_says_alone_and_with_them() -> None:
    times = dataclasses.replace(
        PLACED.predicted,
        step_comm_seconds=0.03,
        neighbour_slowdown_seconds=0.01,
        slowdown_added_to_others_seconds=0.004,
    )
    decision = dataclasses.replace(PLACED, predicted=times)
    body = build_plan_status(decision, spec=SPEC, reservation={}, generation=1)
    predicted = body["predicted"]
    assert predicted["stepCommSeconds"] == 0.03
    assert predicted["aloneStepCommSeconds"] == pytest.approx(0.02)
    assert predicted["neighbourSlowdownSeconds"] == 0.01
    assert predicted["slowdownAddedToOthersSeconds"] == 0.004
    written = TrainingTopologyStatus.model_validate(body).to_body()["predicted"]
    assert written["neighbourSlowdownSeconds"] == 0.01  # the schema carries them, camelCase


def test_a_plan_made_on_a_snapshot_records_its_fabric_facts() -> None:
    """The quality the metrics report is written with the plan, located on its snapshot."""
    snapshot = _snapshot()
    spec = TrainingTopologySpec.model_validate(
        {
            "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "llama"},
            "gpusPerPod": 8,
            "parallelism": {"tensor": 8, "data": 4},
        }
    )
    decision = plan_placement(snapshot, request_from_spec(spec), get_profile("dgx-h100"))
    body = build_plan_status(
        decision,
        spec=spec,
        reservation=reservation_of(decision, 8),
        generation=1,
        snapshot=snapshot,
    )
    quality = decision_quality(snapshot, decision)
    assert quality is not None
    assert body["labelScheme"] == snapshot.scheme
    assert body["predicted"]["groups"] == {
        "tensor": 4, "context": 32, "expert": 32, "data": 8, "pipeline": 32
    }  # fmt: skip
    assert body["predicted"]["spineBytesPerStep"] == quality.spine_bytes_per_step
    assert body["predicted"]["dataGroupsCrossingRailGroup"] == (
        quality.data_groups_crossing_rail_group
    )
    assert body["predicted"]["tensorGroupsCrossingNvlink"] == 0
    TrainingTopologyStatus.model_validate(body)


def _snapshot() -> ClusterSnapshot:
    nodes = fakenodes.node_manifests(fakenodes.FakeFabric(prefix="m"))
    ready = [{**n, "status": {**n["status"], "conditions": [READY]}} for n in nodes]
    return take_snapshot(
        [slim_node(n) for n in ready], [], scheme="auto", default_fabric="dgx-h100"
    )


READY: dict[str, Any] = {"type": "Ready", "status": "True"}


def test_infeasible_status_clears_the_previous_plan() -> None:
    body = build_plan_status(INFEASIBLE, spec=SPEC, reservation={}, generation=5)
    assert body == {
        "observedGeneration": 5,
        "workload": "Job/llama",
        "worldSize": 32,
        "gpusPerPod": 8,
        "gpuChoice": None,
        "pods": [],
        "reservation": [],
        "predicted": None,
        "lowerBoundSeconds": None,
        "efficiency": None,
        "stepComm": None,
        "lowerBound": None,
        "efficiencyPercent": None,
        "reasons": ["needs 32 free GPUs in 4 nodes; 16 free"],
        "fabric": "dgx-h100",
        "labelScheme": None,
        "plannedAt": None,
        "spares": None,
    }
    TrainingTopologyStatus.model_validate(body)


def test_bounds_and_non_finite_numbers() -> None:
    wild = PlacementDecision(
        feasible=True,
        fabric="",
        groups=GROUPS,
        pods=("n0",) * 4,
        predicted=StepTimes(math.inf, {"tensor": 1.0}),
        lower_bound=StepTimes(math.nan),
        reasons=tuple("x" * 2000 for _ in range(MAX_REASONS + 5)),
    )
    body = build_plan_status(wild, spec=SPEC, reservation={"n0": 32, "n9": 0}, generation=1)
    assert body["predicted"] is None
    assert body["efficiency"] is None
    assert body["lowerBoundSeconds"] is None
    assert body["fabric"] is None
    assert body["reservation"] == [{"node": "n0", "gpus": 32}]
    assert len(body["reasons"]) == MAX_REASONS
    assert {len(r) for r in body["reasons"]} == {1024}
    TrainingTopologyStatus.model_validate(body)


seconds = st.floats(min_value=0, max_value=1e12) | st.sampled_from([math.nan, math.inf])


@given(
    st.lists(st.sampled_from(["n0", "n1", "n2", "n3"]), min_size=1, max_size=8),
    seconds,
    seconds,
    st.dictionaries(st.sampled_from(["tensor", "data", "pipeline", "x"]), seconds),
    st.booleans(),
)
def test_any_decision_gives_a_valid_status(
    pods: list[str], total: float, lower: float, by_dim: dict[str, float], feasible: bool
) -> None:
    decision = PlacementDecision(
        feasible=feasible,
        fabric="dgx-h100",
        groups=GROUPS,
        pods=tuple(pods) if feasible else (),
        predicted=StepTimes(total, by_dim),
        lower_bound=StepTimes(lower),
    )
    reservation = reservation_of(decision, 8)
    body = build_plan_status(decision, spec=SPEC, reservation=reservation, generation=0)
    model = TrainingTopologyStatus.model_validate(body)
    assert sum(r.gpus for r in model.reservation) == 8 * len(model.pods)
    assert [p.node for p in model.pods] == (pods if feasible else [])


@pytest.mark.parametrize(
    ("moment", "text"),
    [
        (datetime(2026, 12, 2, 10, 0, 0, 123456, tzinfo=UTC), "2026-12-02T10:00:00Z"),
        ("2026-12-02T10:00:00Z", "2026-12-02T10:00:00Z"),
    ],
)
def test_timestamp(moment: datetime | str, text: str) -> None:
    assert timestamp(moment) == text


def test_timestamp_rejects_non_rfc3339() -> None:
    with pytest.raises(ValueError, match="RFC 3339"):
        timestamp("yesterday")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0s"),
        (1e-10, "0s"),
        (3.2e-9, "3.2ns"),
        (4.5e-5, "45µs"),
        (0.48887466679759367, "489ms"),
        (0.9996, "1s"),
        (1.2549, "1.25s"),
        (59.9, "59.9s"),
        (192.4, "3m12s"),
        (7300.0, "2h1m"),
    ],
)
def test_durations_read_like_kubectl(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


@pytest.mark.parametrize("bad", [None, math.nan, math.inf, -1.0])
def test_no_duration_for_nothing_to_report(bad: float | None) -> None:
    assert format_seconds(bad) is None


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False))
def test_every_duration_fits_the_status_schema(seconds: float) -> None:
    text = format_seconds(seconds)
    assert text is not None
    TrainingTopologyStatus.model_validate({"stepComm": text, "lowerBound": text})


@pytest.mark.parametrize(
    ("ratio", "text"), [(0.0, "0%"), (0.8, "80%"), (0.8549, "85%"), (0.9999, "99%"), (1.0, "100%")]
)
def test_percent_rounds_down(ratio: float, text: str) -> None:
    assert format_percent(ratio) == text


@given(st.floats(min_value=0, max_value=1))
def test_percent_fits_the_status_schema(ratio: float) -> None:
    TrainingTopologyStatus.model_validate({"efficiencyPercent": format_percent(ratio)})


def test_spares_are_reported_and_a_re_placement_takes_the_used_ones_out() -> None:
    spares = SpareSet(per_domain=2, source="fabric gb200-nvl72", by_domain={"d": ("t16", "t17")})
    body = build_plan_status(
        dataclasses.replace(PLACED, spares=spares),
        spec=SPEC,
        reservation=reservation_of(PLACED, 8),
        generation=4,
    )
    assert body["spares"] == {
        "perNvlinkDomain": 2,
        "source": "fabric gb200-nvl72",
        "nodes": ["t16", "t17"],
    }
    assert spares_fields(spares, used=["t16"])["nodes"] == ["t17"]  # type: ignore[index]
    assert spares_fields(SpareSet()) is None
    assert TrainingTopologyStatus.model_validate({"spares": body["spares"]}).spares is not None


def test_a_bound_above_the_prediction_is_a_reason_not_an_efficiency_of_100_percent() -> None:
    """A plan whose lower bound exceeds its prediction (a bug in the bound) writes no
    efficiency — the CRD keeps it in [0, 1], and 100 % would read as optimal — and says why
    first among its reasons."""
    broken = dataclasses.replace(
        PLACED,
        lower_bound=StepTimes(0.03, {"tensor": 0.025}),
        warnings=("the lower bound (0.03 s) is not a bound here",),
    )
    assert broken.efficiency == pytest.approx(1.5)
    assert broken.bound_exceeded
    body = build_plan_status(broken, spec=SPEC, reservation={}, generation=1)
    assert body["efficiency"] is None
    assert body["efficiencyPercent"] is None
    assert body["lowerBoundSeconds"] == pytest.approx(0.03)
    assert body["reasons"][0] == "the lower bound (0.03 s) is not a bound here"
    assert body["reasons"][1:] == list(PLACED.reasons)
    TrainingTopologyStatus.model_validate(body)
