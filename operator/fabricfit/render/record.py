"""The plan a TrainingTopology's status records, parsed once into one typed value (pure).

Theory of operation
-------------------
The operator writes a plan into ``status`` (``pods``: node per pod index, ``reservation``: GPUs
per node, the prediction with the plan's fabric facts, the fabric and scheme it was made with,
the generation it was made for) and reads it back on every reconcile, watch event and metrics
update. Every reader goes through :func:`read_plan`, so there is one rule for what a usable
record is: ``pods`` must name every index ``0..n-1`` exactly once (otherwise the record holds no
plan, and the operator plans again), reservation entries with a bad node or GPU count are
skipped, and entries for the same node add up; the fabric facts
(:class:`~fabricfit.placement.quality.PlanQuality`) are there only when all of them are.
:func:`plan_fields` is the inverse for the fields a re-placement rewrites (the pods, the
reservation and the prediction of the new plan).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabricfit.api.rules import MAX_PODS
from fabricfit.placement.devices import PodDevices
from fabricfit.placement.quality import PlanQuality
from fabricfit.placement.replace import Replacement
from fabricfit.render.status import format_seconds, prediction_fields, spares_fields


@dataclass(frozen=True, slots=True)
class PlanRecord:
    """What ``status`` says about the plan (empty fields when it says nothing usable)."""

    pods: tuple[str, ...] = ()
    reservation: Mapping[str, int] = field(default_factory=dict)
    generation: int | None = None
    fabric: str | None = None
    label_scheme: str | None = None
    inputs: str | None = None  # the constraints digest the plan was made with
    step_comm_seconds: float | None = None
    groups: Mapping[str, int] = field(default_factory=dict)
    quality: PlanQuality | None = None
    # Per pod index, the DRA devices the plan chose (empty: fabricfit does not choose them).
    devices: tuple[PodDevices, ...] = ()

    @property
    def device_holds(self) -> dict[str, frozenset[str]]:
        """GPUs the plan chose, per node: other plans must leave them alone."""
        held: dict[str, set[str]] = {}
        for pod in self.devices:
            held.setdefault(pod.node, set()).update(pod.gpus)
        return {node: frozenset(gpus) for node, gpus in held.items()}

    @property
    def count_reservation(self) -> Mapping[str, int]:
        """The reservation of the nodes whose devices the plan does not name (those it names
        are held device by device, ``device_holds``)."""
        named = self.device_holds
        return {n: g for n, g in self.reservation.items() if n not in named}

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
    predicted = predicted if isinstance(predicted, Mapping) else {}
    seconds = predicted.get("stepCommSeconds")
    groups = _counts(predicted.get("groups"))
    pods = _pods(status.get("pods"))
    return PlanRecord(
        pods=pods,
        devices=_devices(status.get("pods"), pods),
        reservation=_reservation(status.get("reservation")),
        generation=generation if isinstance(generation, int) else None,
        fabric=_text(status.get("fabric")),
        label_scheme=_text(status.get("labelScheme")),
        inputs=_text(status.get("planInputs")),
        step_comm_seconds=float(seconds) if isinstance(seconds, int | float) else None,
        groups=groups,
        quality=_quality(predicted, groups),
    )


def plan_fields(replacement: Replacement, gpus_per_pod: int) -> dict[str, Any]:
    """``status.pods``, ``status.reservation``, ``status.predicted`` and ``status.spares`` after a
    re-placement."""
    pods = replacement.pods
    per_node = Counter(pods)
    predicted = prediction_fields(replacement.predicted, replacement.groups, replacement.quality)
    return {
        "pods": [{"index": i, "node": n} for i, n in enumerate(pods[:MAX_PODS])],
        "reservation": [
            {"node": n, "gpus": c * gpus_per_pod} for n, c in sorted(per_node.items())[:MAX_PODS]
        ],
        "predicted": predicted,
        "stepComm": format_seconds(predicted["stepCommSeconds"]) if predicted else None,
        "spares": spares_fields(replacement.spares, replacement.moved.values()),
    }


def _pods(items: Any) -> tuple[str, ...]:
    by_index: dict[int, str] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("index"), int) and item.get("node"):
            by_index[item["index"]] = str(item["node"])
    if sorted(by_index) != list(range(len(by_index))):
        return ()
    return tuple(by_index[i] for i in range(len(by_index)))


def _devices(items: Any, pods: tuple[str, ...]) -> tuple[PodDevices, ...]:
    """Every pod's recorded devices, or () unless every pod of the plan has GPUs named."""
    found: dict[int, PodDevices] = {}
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping) or not isinstance(item.get("index"), int):
            continue
        gpus, nics = _names(item.get("devices")), _names(item.get("nics"))
        if gpus and 0 <= item["index"] < len(pods):
            found[item["index"]] = PodDevices(pods[item["index"]], gpus, nics)
    if not pods or sorted(found) != list(range(len(pods))):
        return ()
    return tuple(found[i] for i in range(len(pods)))


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(v for v in value if isinstance(v, str) and v)


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


def _counts(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and v >= 0}


def _quality(predicted: Mapping[str, Any], groups: Mapping[str, int]) -> PlanQuality | None:
    spine = predicted.get("spineBytesPerStep")
    tensor = predicted.get("tensorGroupsCrossingNvlink")
    data = predicted.get("dataGroupsCrossingRailGroup")
    if not (isinstance(spine, int | float) and isinstance(tensor, int) and isinstance(data, int)):
        return None
    return PlanQuality(
        tensor_groups=groups.get("tensor", 0),
        tensor_groups_crossing_nvlink=tensor,
        data_groups=groups.get("data", 0),
        data_groups_crossing_rail_group=data,
        spine_bytes_per_step=float(spine),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
