"""The result of planning: a frozen ``PlacementDecision`` (placed, or infeasible with reasons).

Theory of operation
-------------------
A decision is plain data that every consumer reads the same way: the operator writes it into
``status`` and pins pods, ``fabricfit plan --json`` prints ``to_json_dict()``, the views draw it.
Infeasible decisions carry no assignment but say why (one sentence per reason) and how large a
job would fit right now; either way the decision names the spare nodes it kept free. Predicted
and lower-bound step times are per-dimension seconds from the cost model; ``efficiency`` is
lower bound ÷ predicted (1.0 = the fabric's best case).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.placement.layout import GROUP_KINDS, Groups
from fabricfit.placement.request import NOT_ENFORCED
from fabricfit.placement.spares import NO_SPARES, SpareSet


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
class StepTimes:
    """Per-step communication seconds, total and per parallelism dimension."""

    step_comm_seconds: float
    by_dimension: Mapping[str, float] = field(default_factory=_empty_floats)
    spine_bytes_per_step: float = 0.0


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

    @property
    def efficiency(self) -> float:
        if self.predicted is None or self.lower_bound is None:
            return 0.0
        if self.predicted.step_comm_seconds <= 0:
            return 1.0
        ratio = self.lower_bound.step_comm_seconds / self.predicted.step_comm_seconds
        # The bound is a bound (cost.bounds; tests/unit/placement/test_bound_property.py): a
        # ratio above 1 can only be the rounding of two equal sums added in another order.
        return min(1.0, ratio)

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
            "efficiency": round(self.efficiency, 6) if self.feasible else None,
            "reasons": list(self.reasons),
            "failure": self.failure.value if self.failure is not None else None,
            "largest_feasible": _largest_json(self.largest_feasible),
            "candidate": self.candidate,
            "spares": self.spares.to_json_dict(),
        }


def _times_json(times: StepTimes | None) -> dict[str, Any] | None:
    if times is None:
        return None
    return {
        "step_comm_seconds": times.step_comm_seconds,
        "by_dimension": {k: times.by_dimension.get(k, 0.0) for k in GROUP_KINDS},
    }


def _largest_json(fit: LargestFit | None) -> dict[str, int] | None:
    if fit is None:
        return None
    return {"pods": fit.pods, "world_size": fit.world_size, "data": fit.data}
