"""The result of planning: a frozen ``PlacementDecision`` (placed, or infeasible with reasons).

Theory of operation
-------------------
A decision is plain data that every consumer reads the same way: the operator writes it into
``status`` and pins pods, ``fabricfit plan --json`` prints ``to_json_dict()``, the views draw it.
Infeasible decisions carry no assignment but say why (one sentence per reason) and how large a
job would fit right now; either way the decision names the spare nodes it kept free. Predicted
and lower-bound step times are per-dimension seconds from the cost model; ``efficiency`` is
lower bound ÷ predicted (1.0 = the fabric's best case). It is never clamped: the bound is proved
only by a property test (``tests/unit/placement/test_bound_property.py``), so a plan whose
prediction falls below its bound says so in ``warnings`` (:func:`bound_warnings`) and shows its
efficiency above 100 %, rather than a 100 % that would pass for optimal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.placement.layout import GROUP_KINDS, Groups
from fabricfit.placement.request import NOT_ENFORCED
from fabricfit.placement.spares import NO_SPARES, SpareSet

#: Relative slack of "bound ≤ predicted": both are sums of the same per-call terms, added in
#: another order, so two equal totals can differ in their last bits.
BOUND_SLACK = 1e-9


def _empty_floats() -> Mapping[str, float]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class RankPlacement:
    """Global rank ``rank`` runs on GPU ``gpu`` of ``node`` (local GPU ``local`` of pod ``pod``);
    ``device`` and ``nic`` name the DRA GPU and RDMA NIC when fabricfit chooses them."""

    rank: int
    node: str
    gpu: int
    pod: int
    local: int
    device: str | None = None
    nic: str | None = None


@dataclass(frozen=True, slots=True)
class ServingTimes:
    """A served model's communication per phase (``fabricfit.cost.serving``); None where the
    role does not run the phase or no partner's plan prices a KV transfer."""

    decode_token_comm_seconds: float | None = None
    prefill_comm_seconds: float | None = None
    kv_transfer_seconds: float | None = None

    def to_json_dict(self) -> dict[str, float | None]:
        return {
            "decode_token_comm_seconds": self.decode_token_comm_seconds,
            "prefill_comm_seconds": self.prefill_comm_seconds,
            "kv_transfer_seconds": self.kv_transfer_seconds,
        }


@dataclass(frozen=True, slots=True)
class StepTimes:
    """Per-step communication seconds, total and per parallelism dimension; for a served model
    ``step_comm_seconds`` is its objective (the communication on the path to a first token)
    and ``serving`` the phases."""

    step_comm_seconds: float
    by_dimension: Mapping[str, float] = field(default_factory=_empty_floats)
    spine_bytes_per_step: float = 0.0
    serving: ServingTimes | None = None
    # Priced against running jobs (placement.neighbours; None when it was not): the seconds per
    # step the links this placement shares cost it (included in the two fields above), the
    # seconds per step it would cost the running jobs, summed over them, and the GPU-seconds
    # they would lose during one step of this job (what the search weighs).
    neighbour_slowdown_seconds: float | None = None
    slowdown_added_to_others_seconds: float | None = None
    added_to_others_gpu_seconds: float = 0.0

    @property
    def alone_step_comm_seconds(self) -> float:
        """Step communication without the running jobs' traffic."""
        return self.step_comm_seconds - (self.neighbour_slowdown_seconds or 0.0)


@dataclass(frozen=True, slots=True)
class LargestFit:
    """The largest job of the same shape that fits now."""

    pods: int
    world_size: int
    data: int


@dataclass(frozen=True, slots=True)
class PlacementDecision:
    """A placement plan, or why there is none: ``failure`` is the condition reason an
    infeasible decision surfaces as (the policy refuses specs no cluster can hold before the
    planner runs, so every planner failure is ``InsufficientGPUs``: this cluster, now),
    ``reasons`` the sentences."""

    feasible: bool
    fabric: str
    groups: Mapping[str, Groups]
    pods: tuple[str, ...] = ()
    assignments: tuple[RankPlacement, ...] = ()
    predicted: StepTimes | None = None
    lower_bound: StepTimes | None = None
    reasons: tuple[str, ...] = ()
    largest_feasible: LargestFit | None = None
    scores: Mapping[str, float] = field(default_factory=_empty_floats)
    candidate: str = ""
    spares: SpareSet = NO_SPARES  # the nodes this plan left free as spares
    failure: Reason | None = None
    gpu_choice: str = NOT_ENFORCED  # who picks each pod's GPUs (placement.request)
    # Per parallelism dimension, the groups whose traffic between nodes changes rails.
    cross_rail: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    warnings: tuple[str, ...] = ()  # what is wrong with the plan's own numbers (bound_warnings)

    @property
    def efficiency(self) -> float:
        """Lower bound ÷ predicted; above 1 only when the bound is wrong (see ``warnings``)."""
        if self.predicted is None or self.lower_bound is None:
            return 0.0
        if self.predicted.step_comm_seconds <= 0:
            return 1.0 if self.lower_bound.step_comm_seconds <= 0 else math.inf
        return self.lower_bound.step_comm_seconds / self.predicted.step_comm_seconds

    @property
    def bound_exceeded(self) -> bool:
        """The lower bound is above the prediction: the bound, not the plan, is wrong."""
        return self.efficiency > 1 + BOUND_SLACK

    def to_json_dict(self) -> dict[str, Any]:
        """The ``fabricfit plan --json`` object (field names are a public contract)."""
        return {
            "feasible": self.feasible,
            "fabric": self.fabric,
            "assignments": [
                {"rank": a.rank, "node": a.node, "gpu": a.gpu, "device": a.device, "nic": a.nic}
                for a in self.assignments
            ],
            "gpuChoice": self.gpu_choice,
            "crossRail": {k: self.cross_rail.get(k, 0) for k in GROUP_KINDS}
            if self.feasible
            else None,
            "pods": [{"index": i, "node": n} for i, n in enumerate(self.pods)],
            "groups": {k: [list(g) for g in self.groups.get(k, ())] for k in GROUP_KINDS},
            "predicted": _times_json(self.predicted),
            "lower_bound_seconds": (
                self.lower_bound.step_comm_seconds if self.lower_bound is not None else None
            ),
            "efficiency": _finite(self.efficiency) if self.feasible else None,
            "reasons": list(self.reasons),
            "failure": self.failure.value if self.failure is not None else None,
            "largest_feasible": _largest_json(self.largest_feasible),
            "candidate": self.candidate,
            "spares": self.spares.to_json_dict(),
            "warnings": list(self.warnings),
        }


def _finite(ratio: float) -> float | None:
    """A ratio for JSON: rounded, or None where it is not a number (a bound over no time)."""
    return round(ratio, 6) if math.isfinite(ratio) else None


def bound_warnings(predicted: StepTimes, lower_bound: StepTimes) -> tuple[str, ...]:
    """One sentence when a dimension's lower bound exceeds its prediction (a fabricfit bug:
    the bound must hold for every placement), naming the dimensions and the figures."""
    over = [
        dim
        for dim, bound in lower_bound.by_dimension.items()
        if bound > predicted.by_dimension.get(dim, 0.0) * (1 + BOUND_SLACK)
    ]
    total_over = lower_bound.step_comm_seconds > predicted.step_comm_seconds * (1 + BOUND_SLACK)
    if not over and not total_over:
        return ()
    return (
        f"the lower bound ({lower_bound.step_comm_seconds:.4g} s) is not a bound here: it "
        f"exceeds the prediction ({predicted.step_comm_seconds:.4g} s) in "
        f"{', '.join(over) or 'total'}; efficiency is meaningless for this plan "
        "(a fabricfit bug: please report the job and fabric)",
    )


def _times_json(times: StepTimes | None) -> dict[str, Any] | None:
    if times is None:
        return None
    found: dict[str, Any] = {
        "step_comm_seconds": times.step_comm_seconds,
        "by_dimension": {k: times.by_dimension.get(k, 0.0) for k in GROUP_KINDS},
    }
    if times.neighbour_slowdown_seconds is not None:  # priced next to running jobs
        found["neighbour_slowdown_seconds"] = times.neighbour_slowdown_seconds
        found["slowdown_added_to_others_seconds"] = times.slowdown_added_to_others_seconds
    if times.serving is not None:  # a training plan's JSON keeps its fields as they were
        found.update(times.serving.to_json_dict())
    return found


def _largest_json(fit: LargestFit | None) -> dict[str, int] | None:
    if fit is None:
        return None
    return {"pods": fit.pods, "world_size": fit.world_size, "data": fit.data}
