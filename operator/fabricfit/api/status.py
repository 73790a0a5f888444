"""Pydantic models of the TrainingTopology status, plus the pure condition helpers.

The operator is the only writer of ``status``. Conditions follow ``metav1.Condition`` (type,
status, reason, message, lastTransitionTime, observedGeneration), so kubectl, Kueue-style
tooling and ``kubectl wait --for=condition=Placed`` work unchanged. ``summary`` is the one
string the printer column shows; API conventions deprecate ``phase``, so it is always *derived*
from the conditions (``summarize``) and never decided on its own.

``reservation`` is the double-booking guard: the GPUs a plan holds are written here *before*
any pod is pinned, so after an operator restart the planner subtracts every TrainingTopology's
reservation from the free GPUs it sees. ``kopf`` is kopf's own bookkeeping (progress storage);
its schema preserves unknown fields, or the API server would silently prune it.

Status models ignore unknown fields when parsing (unlike spec models): the status read back may
have been written by a newer operator version, and a reconcile must not fail on it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from fabricfit.api.conditions import INVALID_REASONS, ConditionStatus, ConditionType, Reason
from fabricfit.api.models import MAX_GPUS_PER_POD
from fabricfit.api.planstatus import (
    ComputeDomainReport,
    GpuAllocation,
    NodeReservation,
    PodPlacement,
    Prediction,
    SpareReport,
)
from fabricfit.api.rules import MAX_PODS
from fabricfit.api.statusbase import (
    CONDITION_TYPE_PATTERN,
    DATE_TIME,
    DATE_TIME_PATTERN,
    DURATION_PATTERN,
    MAX_CONDITIONS,
    MAX_DEGRADED_RANKS,
    MAX_GENERATION,
    MAX_REASONS,
    MAX_SECONDS,
    MAX_WORLD_SIZE,
    PERCENT_PATTERN,
    REASON_PATTERN,
    Rank,
    ReasonText,
    StatusModel,
    map_list,
)

Summary = Literal["Pending", "Planned", "Placed", "Degraded", "Invalid", "Waiting", "Finished"]


class Condition(StatusModel):
    """One condition, in the shape of ``metav1.Condition``."""

    type: str = Field(
        max_length=316,
        pattern=CONDITION_TYPE_PATTERN,
        description="Planned, Placed, Degraded, TopologyDetected, ComputeDomain or LatencyTarget.",
    )
    status: ConditionStatus = Field(description="True, False or Unknown.")
    observed_generation: int | None = Field(
        default=None, ge=0, le=MAX_GENERATION, description="metadata.generation this was set from."
    )
    last_transition_time: str = Field(
        max_length=64,
        pattern=DATE_TIME_PATTERN,
        json_schema_extra=DATE_TIME,
        description="When the status last changed (RFC 3339).",
    )
    reason: str = Field(
        min_length=1, max_length=1024, pattern=REASON_PATTERN, description="CamelCase reason."
    )
    message: str = Field(max_length=32768, description="Human-readable details.")


class TrainingTopologyStatus(StatusModel):
    """Status of a TrainingTopology: conditions, the plan, its reservation and prediction."""

    observed_generation: int | None = Field(
        default=None, ge=0, le=MAX_GENERATION, description="Last metadata.generation reconciled."
    )
    conditions: tuple[Condition, ...] = Field(
        default=(),
        max_length=MAX_CONDITIONS,
        json_schema_extra=map_list("type"),
        description="Planned, Placed, Degraded, TopologyDetected, ComputeDomain, LatencyTarget.",
    )
    summary: Summary = Field(
        default="Pending",
        description="Pending, Planned, Placed, Degraded, Invalid, Waiting or Finished.",
    )
    workload: str | None = Field(default=None, max_length=317, description="Kind/name.")
    world_size: int | None = Field(default=None, ge=0, le=MAX_WORLD_SIZE, description="Ranks.")
    gpus_per_pod: int | None = Field(
        default=None,
        ge=1,
        le=MAX_GPUS_PER_POD,
        description="GPUs per pod the plan used (spec.gpusPerPod, or the workload's request).",
    )
    pods: tuple[PodPlacement, ...] = Field(
        default=(),
        max_length=MAX_PODS,
        json_schema_extra=map_list("index"),
        description="The planned node of each pod.",
    )
    reservation: tuple[NodeReservation, ...] = Field(
        default=(),
        max_length=MAX_PODS,
        json_schema_extra=map_list("node"),
        description="GPUs held by this plan, per node; written before any pod is pinned.",
    )
    predicted: Prediction | None = Field(default=None, description="Predicted step comm time.")
    plan_inputs: str | None = Field(
        default=None,
        max_length=64,
        pattern=r"^[0-9a-f]*$",
        description=(
            "Digest of the pod template's placement constraints the plan was made with: a plan "
            "made before the workload existed is made again once its constraints are known."
        ),
    )
    lower_bound_seconds: float | None = Field(
        default=None, ge=0, le=MAX_SECONDS, description="Lower bound of the step comm time."
    )
    efficiency: float | None = Field(
        default=None, ge=0, le=1, description="lowerBoundSeconds / predicted.stepCommSeconds."
    )
    step_comm: str | None = Field(
        default=None,
        max_length=32,
        pattern=DURATION_PATTERN,
        description="predicted.stepCommSeconds as a duration for people (e.g. 489ms).",
    )
    lower_bound: str | None = Field(
        default=None,
        max_length=32,
        pattern=DURATION_PATTERN,
        description="lowerBoundSeconds as a duration for people (e.g. 412ms).",
    )
    efficiency_percent: str | None = Field(
        default=None,
        max_length=4,
        pattern=PERCENT_PATTERN,
        description="efficiency as a whole percent, rounded down (e.g. 85%).",
    )
    reasons: tuple[ReasonText, ...] = Field(
        default=(),
        max_length=MAX_REASONS,
        description="Why the plan is infeasible, or why a preference was not met.",
    )
    degraded_ranks: tuple[Rank, ...] = Field(
        default=(),
        max_length=MAX_DEGRADED_RANKS,
        json_schema_extra={"x-kubernetes-list-type": "set"},
        description="Ranks on unavailable nodes, ascending (the first 4096).",
    )
    gpu_allocation: GpuAllocation | None = Field(
        default=None,
        description="Set when the pods claim their GPUs through DRA resource claims.",
    )
    gpu_choice: Literal["enforced", "not-enforced"] | None = Field(
        default=None,
        description="Who picks each pod's GPUs on its node: enforced (fabricfit allocates each "
        "pod's DRA claim the devices of the plan) or not-enforced (the device plugin or "
        "kube-scheduler; the plan is priced on what they hand out).",
    )
    fabric: str | None = Field(default=None, max_length=63, description="Fabric profile used.")
    fabric_reason: str | None = Field(
        default=None, max_length=512, description="Why that fabric profile was chosen."
    )
    label_scheme: str | None = Field(default=None, max_length=63, description="Label scheme used.")
    compute_domain: ComputeDomainReport | None = Field(
        default=None, description="The plan's ComputeDomain (multi-node NVLink), when it needs one."
    )
    spares: SpareReport | None = Field(
        default=None, description="Spare nodes the plan keeps free, when it keeps any."
    )
    planned_at: str | None = Field(
        default=None,
        max_length=64,
        pattern=DATE_TIME_PATTERN,
        json_schema_extra=DATE_TIME,
        description="When the plan was made (RFC 3339).",
    )
    kopf: dict[str, Any] | None = Field(
        default=None,
        json_schema_extra={"x-kubernetes-preserve-unknown-fields": True},
        description="kopf's own bookkeeping; preserved as is.",
    )

    @model_validator(mode="after")
    def _derive_summary(self) -> TrainingTopologyStatus:
        # Whatever was passed in, the summary is a function of the conditions; frozen models
        # are set through object.__setattr__ during validation only. It counts as set exactly
        # when the conditions are, so a partial patch never resets a summary to Pending.
        object.__setattr__(self, "summary", summarize(self.conditions))
        if "conditions" in self.model_fields_set:
            self.__pydantic_fields_set__.add("summary")
        else:
            self.__pydantic_fields_set__.discard("summary")
        return self

    def to_body(self) -> dict[str, Any]:
        """The JSON body of a status merge patch: camelCase, only the fields that were set.

        Fields left unset are left out, so writing ``conditions`` alone can never wipe the
        ``reservation`` (or kopf's bookkeeping) that another write recorded."""
        fields = set(self.model_fields_set)
        return self.model_dump(by_alias=True, mode="json", include=fields, exclude_none=True)


def rfc3339(moment: datetime) -> str:
    """``moment`` as Kubernetes writes ``metav1.Time``: UTC, whole seconds, ``Z`` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def find_condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    """The condition of ``type_``, or None when absent (absent means Unknown)."""
    return next((c for c in conditions if c.type == type_), None)


def set_condition(conditions: tuple[Condition, ...], new: Condition) -> tuple[Condition, ...]:
    """``conditions`` with ``new`` replacing its type, like ``meta.SetStatusCondition``:
    ``lastTransitionTime`` only moves when ``status`` changes. Order of types is kept."""
    old = find_condition(conditions, new.type)
    if old is None:
        return (*conditions, new)
    if old.status == new.status:
        new = new.model_copy(update={"last_transition_time": old.last_transition_time})
    return tuple(new if c.type == new.type else c for c in conditions)


def summarize(conditions: tuple[Condition, ...]) -> Summary:
    """The printer-column summary: Finished > Degraded > Placed > Planned > Invalid/Waiting >
    Pending."""
    placed = find_condition(conditions, ConditionType.PLACED)
    if placed is not None and placed.reason == Reason.WORKLOAD_FINISHED.value:
        return "Finished"
    if _is_true(conditions, ConditionType.DEGRADED):
        return "Degraded"
    if _is_true(conditions, ConditionType.PLACED):
        return "Placed"
    planned = find_condition(conditions, ConditionType.PLANNED)
    if planned is None or planned.status == "Unknown":
        return "Pending"
    if planned.status == "True":
        return "Planned"
    return "Invalid" if planned.reason in INVALID_REASONS else "Waiting"


def _is_true(conditions: tuple[Condition, ...], type_: str) -> bool:
    found = find_condition(conditions, type_)
    return found is not None and found.status == "True"
