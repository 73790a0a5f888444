"""The plan a TrainingTopology's status records, parsed once into one typed value (pure).

Theory of operation
-------------------
The operator writes a plan into ``status`` (``pods``: node per pod index, ``reservation``:
GPUs per node, the prediction, the fabric and scheme it was made with, the generation it was
made for) and reads it back on every reconcile, watch event and metrics update. Every reader
goes through :func:`read_plan`, so there is one rule for what a usable record is: ``pods`` must
name every index ``0..n-1`` exactly once (otherwise the record holds no plan, and the operator
plans again), reservation entries with a bad node or GPU count are skipped, and entries for the
same node add up. :func:`plan_fields` is the inverse for the two fields a re-placement rewrites.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabricfit.api.rules import MAX_PODS


@dataclass(frozen=True, slots=True)
class PlanRecord:
    """What ``status`` says about the plan (empty fields when it says nothing usable)."""

    pods: tuple[str, ...] = ()
    reservation: Mapping[str, int] = field(default_factory=dict)
    generation: int | None = None
    fabric: str | None = None
    label_scheme: str | None = None
    step_comm_seconds: float | None = None

    @property
    def nodes(self) -> tuple[str, ...]:
        """The distinct planned nodes, sorted."""
        return tuple(sorted(set(self.pods)))

    def made_for(self, generation: int) -> bool:
        """Whether the plan is complete and was made for the spec's ``generation``."""
        return bool(self.pods) and self.generation == generation


def read_plan(status: Mapping[str, Any] | None) -> PlanRecord:
    """The plan recorded in ``status`` (see the module doc for what counts as usable)."""
    status = status or {}
    generation = status.get("observedGeneration")
    predicted = status.get("predicted")
    seconds = predicted.get("stepCommSeconds") if isinstance(predicted, Mapping) else None
    return PlanRecord(
        pods=_pods(status.get("pods")),
        reservation=_reservation(status.get("reservation")),
        generation=generation if isinstance(generation, int) else None,
        fabric=_text(status.get("fabric")),
        label_scheme=_text(status.get("labelScheme")),
        step_comm_seconds=float(seconds) if isinstance(seconds, int | float) else None,
    )


def plan_fields(pods: Sequence[str], gpus_per_pod: int) -> dict[str, Any]:
    """``status.pods`` and ``status.reservation`` for the plan ``pods`` (node per pod index)."""
    per_node = Counter(pods)
    return {
        "pods": [{"index": i, "node": n} for i, n in enumerate(pods[:MAX_PODS])],
        "reservation": [
            {"node": n, "gpus": c * gpus_per_pod} for n, c in sorted(per_node.items())[:MAX_PODS]
        ],
    }


def _pods(items: Any) -> tuple[str, ...]:
    by_index: dict[int, str] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("index"), int) and item.get("node"):
            by_index[item["index"]] = str(item["node"])
    if sorted(by_index) != list(range(len(by_index))):
        return ()
    return tuple(by_index[i] for i in range(len(by_index)))


def _reservation(items: Any) -> dict[str, int]:
    result: dict[str, int] = {}
    for item in items if isinstance(items, list) else []:
        if (
            isinstance(item, Mapping)
            and isinstance(item.get("node"), str)
            and isinstance(item.get("gpus"), int)
        ):
            result[item["node"]] = result.get(item["node"], 0) + item["gpus"]
    return result


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
