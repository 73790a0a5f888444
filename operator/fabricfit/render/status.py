"""TrainingTopology status bodies built from a placement decision (pure).

Theory of operation
-------------------
``build_plan_status`` maps a :class:`~fabricfit.placement.decision.PlacementDecision` onto the
plan fields of :class:`fabricfit.api.status.TrainingTopologyStatus`, in camelCase. It is meant
as a merge patch on ``status``: every plan field is present, with ``[]`` or ``null`` where the
decision has nothing, so a plan that became infeasible clears the pods, prediction and
efficiency of the previous one instead of leaving them behind. Lists are capped at the
schema's bounds so the API server never rejects a status write. Conditions and the summary
are the reconcile's (``reconcile.draft``).

``stepComm``, ``lowerBound`` and ``efficiencyPercent`` repeat the numeric fields for people
(``489ms``, ``85%``): ``kubectl get tt`` prints them, scripts keep reading the numbers.

``predicted`` also records the plan's fabric facts (communicator groups per dimension, groups
crossing an NVLink domain or a rail group, spine bytes per step), located on the snapshot the
plan was made on: the operator's metrics read them off the record and never price a plan again;
and, when the plan was priced next to the running jobs, its communication alone, the slowdown
the links it shares with them add, and what it adds to them (``neighbour_fields``).

``reservation`` (node → GPUs) is the double-booking guard and comes from
:func:`reservation_of`; the operator writes it before pinning any pod.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from fabricfit.api.models import MAX_GPUS_PER_POD, TrainingTopologySpec
from fabricfit.api.rules import MAX_PODS
from fabricfit.api.status import rfc3339
from fabricfit.api.statusbase import DATE_TIME_PATTERN, MAX_BYTES, MAX_REASONS, MAX_SECONDS
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.decision import PlacementDecision, ServingTimes, StepTimes
from fabricfit.placement.devices import pod_devices
from fabricfit.placement.layout import GROUP_KINDS, Groups
from fabricfit.placement.quality import PlanQuality, decision_quality
from fabricfit.placement.spares import SpareSet

MAX_REASON_CHARS = 1024
#: ``status.predicted`` fields about the running jobs (``neighbour_fields``).
NEIGHBOUR_FIELDS = (
    "aloneStepCommSeconds",
    "neighbourSlowdownSeconds",
    "slowdownAddedToOthersSeconds",
)
# Go-style units under a minute, largest first: what `kubectl` users read as durations.
_SUBMINUTE_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def format_seconds(seconds: float | None) -> str | None:
    """A duration for people, three significant digits: ``489ms``, ``1.25s``, ``3m12s``."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return None
    rounded = float(f"{seconds:.3g}")
    if rounded < 0.5e-9:
        return "0s"
    if rounded < 60:
        unit, scale = next((u, f) for u, f in _SUBMINUTE_UNITS if rounded >= f or u == "ns")
        return f"{rounded / scale:.3g}{unit}"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes}m" if hours else f"{minutes}m{secs}s"


def format_percent(ratio: float | None) -> str | None:
    """A ratio in [0, 1] as a whole percent, rounded down (``100%`` only when it is 1)."""
    if ratio is None or not math.isfinite(ratio):
        return None
    return f"{math.floor(min(max(ratio, 0.0), 1.0) * 100 + 1e-9)}%"


def timestamp(moment: datetime | str) -> str:
    """``moment`` as an RFC 3339 ``metav1.Time`` string (datetimes: UTC, whole seconds)."""
    if isinstance(moment, datetime):
        return rfc3339(moment)
    if not re.match(DATE_TIME_PATTERN, moment):
        raise ValueError(f"not an RFC 3339 time: {moment!r}")
    return moment


def reservation_of(decision: PlacementDecision, gpus_per_pod: int) -> dict[str, int]:
    """GPUs the plan takes per node (pods on the node × ``gpus_per_pod``), sorted by node."""
    if not decision.feasible:
        return {}
    pods_per_node = Counter(decision.pods)
    return {node: pods_per_node[node] * gpus_per_pod for node in sorted(pods_per_node)}


def build_plan_status(
    decision: PlacementDecision,
    *,
    spec: TrainingTopologySpec,
    reservation: Mapping[str, int],
    generation: int,
    snapshot: ClusterSnapshot | None = None,
    planned_at: datetime | str | None = None,
) -> dict[str, Any]:
    """The plan part of ``status`` for ``decision`` (camelCase; see the module doc), made on
    ``snapshot`` (its label scheme; the plan's fabric facts are located on it)."""
    ref = spec.workload_ref
    feasible = decision.feasible
    quality = decision_quality(snapshot, decision) if snapshot is not None else None
    predicted = (
        prediction_fields(decision.predicted, decision.groups, quality) if feasible else None
    )
    lower = _seconds(decision.lower_bound.step_comm_seconds) if decision.lower_bound else None
    # status.efficiency is in [0, 1] (the CRD says so): a plan whose bound is wrong carries the
    # warning in reasons instead of an efficiency that would read as optimal
    known = predicted and lower is not None and not decision.bound_exceeded
    efficiency = min(1.0, round(decision.efficiency, 6)) if known else None
    return {
        "observedGeneration": generation,
        "workload": f"{ref.kind}/{ref.name}" if ref is not None else None,
        "worldSize": spec.world_size,
        "gpusPerPod": spec.gpus_per_pod,
        "pods": pods_fields(decision) if feasible else [],
        "gpuChoice": decision.gpu_choice if feasible else None,
        "reservation": [
            {"node": node, "gpus": gpus}
            for node, gpus in sorted(reservation.items())[:MAX_PODS]
            if gpus > 0
        ],
        "predicted": predicted,
        "lowerBoundSeconds": lower if feasible else None,
        "efficiency": efficiency,
        "stepComm": format_seconds(predicted["stepCommSeconds"]) if predicted else None,
        "lowerBound": format_seconds(lower) if feasible else None,
        "efficiencyPercent": format_percent(efficiency),
        "reasons": [
            r[:MAX_REASON_CHARS] for r in (*decision.warnings, *decision.reasons)[:MAX_REASONS]
        ],
        "fabric": decision.fabric or None,
        "labelScheme": snapshot.scheme if snapshot is not None else None,
        "plannedAt": timestamp(planned_at) if planned_at is not None else None,
        "spares": spares_fields(decision.spares),
    }


def pods_fields(decision: PlacementDecision) -> list[dict[str, Any]]:
    """``status.pods``: each pod's node and, when the plan chose them, its DRA devices."""
    named = pod_devices(decision, MAX_GPUS_PER_POD)
    out: list[dict[str, Any]] = []
    for index, node in enumerate(decision.pods[:MAX_PODS]):
        entry: dict[str, Any] = {"index": index, "node": node}
        if named:
            entry["devices"] = list(named[index].gpus)
            if named[index].nics:
                entry["nics"] = list(named[index].nics)
        out.append(entry)
    return out


def without_efficiency(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Plan ``fields`` with the efficiency unknown: made where no topology tier was detected,
    every placement looks optimal, so 100% would say nothing."""
    return {**fields, "efficiency": None, "efficiencyPercent": None}


def spares_fields(spares: SpareSet, used: Iterable[str] = ()) -> dict[str, Any] | None:
    """``status.spares``: the spares of a plan, minus the ones a re-placement just ``used``;
    None when the plan keeps none."""
    if spares.per_domain <= 0:
        return None
    taken = set(used)
    return {
        "perNvlinkDomain": spares.per_domain,
        "source": spares.source,
        "nodes": [n for n in spares.nodes if n not in taken][:MAX_PODS],
    }


def prediction_fields(
    times: StepTimes | None, groups: Mapping[str, Groups], quality: PlanQuality | None
) -> dict[str, Any] | None:
    """``status.predicted`` of a plan: its step times, its groups and, where the plan could
    be located on the fabric, its crossings and spine bytes (what the metrics report)."""
    if times is None:
        return None
    total = _seconds(times.step_comm_seconds)
    if total is None:
        return None
    by_dimension = {k: _seconds(times.by_dimension.get(k, 0.0)) or 0.0 for k in GROUP_KINDS}
    fields: dict[str, Any] = {
        "stepCommSeconds": total,
        "byDimension": by_dimension,
        "groups": {k: len(groups.get(k, ())) for k in GROUP_KINDS},
        "spineBytesPerStep": None,
        "tensorGroupsCrossingNvlink": None,
        "dataGroupsCrossingRailGroup": None,
    }
    if times.serving is not None:
        fields.update(serving_fields(times.serving))
    spine = _bytes(quality.spine_bytes_per_step) if quality is not None else None
    if quality is not None and spine is not None:
        fields["spineBytesPerStep"] = spine
        fields["tensorGroupsCrossingNvlink"] = quality.tensor_groups_crossing_nvlink
        fields["dataGroupsCrossingRailGroup"] = quality.data_groups_crossing_rail_group
    fields.update(neighbour_fields(times))
    return fields


def serving_fields(times: ServingTimes) -> dict[str, float | None]:
    """A served model's phases in ``status.predicted`` (null where the role does not run one)."""
    phases = {
        "decodeTokenCommSeconds": times.decode_token_comm_seconds,
        "prefillCommSeconds": times.prefill_comm_seconds,
        "kvTransferSeconds": times.kv_transfer_seconds,
    }
    return {k: None if v is None else _seconds(v) for k, v in phases.items()}


def neighbour_fields(times: StepTimes) -> dict[str, float | None]:
    """The prediction alone and next to the running jobs (every field None when the plan was
    not priced next to them, so a merge patch clears an older plan's figures)."""
    slowdown = times.neighbour_slowdown_seconds
    if slowdown is None:
        return dict.fromkeys(NEIGHBOUR_FIELDS)
    added = times.slowdown_added_to_others_seconds or 0.0
    return {
        "aloneStepCommSeconds": _seconds(times.alone_step_comm_seconds),
        "neighbourSlowdownSeconds": _seconds(slowdown),
        "slowdownAddedToOthersSeconds": _seconds(added),
    }


def _bytes(value: float) -> float | None:
    if not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), MAX_BYTES)


def _seconds(value: float) -> float | None:
    """Seconds within the schema's bounds; None for NaN or infinity (nothing to report)."""
    if not math.isfinite(value):
        return None
    return min(max(float(value), 0.0), MAX_SECONDS)
