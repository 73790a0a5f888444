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
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

from fabricfit.api.conditions import INVALID_REASONS, ConditionStatus, ConditionType, Reason
from fabricfit.api.models import MAX_GPUS_PER_NODE, MAX_GPUS_PER_POD
from fabricfit.api.rules import MAX_PODS

Summary = Literal["Pending", "Planned", "Placed", "Degraded", "Invalid", "Waiting", "Finished"]

MAX_CONDITIONS = 16
MAX_REASONS = 32
MAX_DEGRADED_RANKS = 4096
MAX_WORLD_SIZE = MAX_PODS * MAX_GPUS_PER_POD
MAX_SECONDS = 1e9
MAX_BYTES = float(2**53)  # 9 PB per step; the API server holds bounds as float64
# The API server reads bounds as float64: 2^63-1 is not representable, and it rejects status
# writes against such a schema ("Maximum boundary value must be of type integer").
MAX_GENERATION = 2**53 - 1
REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
# metav1.Condition.type: an optional DNS-subdomain prefix and "/", then a qualified name.
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_DATE_TIME: Final[JsonDict] = {"format": "date-time"}
# RFC 3339 as metav1.Time writes it; the pattern lets pydantic (and jsonschema without a format
# plugin) check what the API server checks through ``format: date-time``.
DATE_TIME_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"
)
NodeName = Annotated[str, Field(min_length=1, max_length=253, description="Name of the node.")]
ReasonText = Annotated[str, Field(max_length=1024, description="One reason, in plain words.")]
Rank = Annotated[int, Field(ge=0, le=MAX_WORLD_SIZE - 1, description="A global rank.")]
# What printer columns show people: a Go-style duration ("489ms", "1.2s") and a whole percent.
DURATION_PATTERN = r"^[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m|h)([0-9]+(\.[0-9]+)?(s|m))?$"
PERCENT_PATTERN = r"^[0-9]{1,3}%$"


def _map_list(*keys: str) -> JsonDict:
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


class StatusModel(BaseModel):
    """Base for status models: camelCase aliases, frozen, unknown fields ignored on read."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )


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
        json_schema_extra=_DATE_TIME,
        description="When the status last changed (RFC 3339).",
    )
    reason: str = Field(
        min_length=1, max_length=1024, pattern=REASON_PATTERN, description="CamelCase reason."
    )
    message: str = Field(max_length=32768, description="Human-readable details.")


DeviceName = Annotated[
    str, Field(min_length=1, max_length=63, description="A DRA device name (a DNS label).")
]


class PodPlacement(StatusModel):
    """The node chosen for one pod (by its completion or replica index), and the DRA devices
    when fabricfit chose them (gpuChoice enforced)."""

    index: int = Field(ge=0, le=MAX_PODS - 1, description="Pod index in the workload.")
    node: NodeName
    devices: tuple[DeviceName, ...] | None = Field(
        default=None,
        max_length=MAX_GPUS_PER_POD,
        description="GPUs (driver gpu.nvidia.com) the pod's claim is allocated, in local-rank "
        "order; empty when fabricfit does not choose them.",
    )
    nics: tuple[DeviceName, ...] | None = Field(
        default=None,
        max_length=MAX_GPUS_PER_POD,
        description="RDMA NICs (driver dra.net) on those GPUs' PCIe roots, in the same order.",
    )


class NodeReservation(StatusModel):
    """GPUs this plan holds on one node, recorded before any pod is pinned."""

    node: NodeName
    gpus: int = Field(ge=1, le=MAX_GPUS_PER_NODE, description="GPUs reserved on the node.")


class DimensionSeconds(StatusModel):
    """Predicted communication seconds per training step, per parallelism dimension."""

    tensor: float = Field(
        default=0.0, ge=0, le=MAX_SECONDS, description="Tensor-parallel collectives, seconds."
    )
    context: float = Field(
        default=0.0, ge=0, le=MAX_SECONDS, description="Context-parallel exchanges, seconds."
    )
    expert: float = Field(
        default=0.0, ge=0, le=MAX_SECONDS, description="Expert-parallel all-to-all, seconds."
    )
    data: float = Field(
        default=0.0, ge=0, le=MAX_SECONDS, description="Data-parallel gradient sync, seconds."
    )
    pipeline: float = Field(
        default=0.0, ge=0, le=MAX_SECONDS, description="Pipeline send/recv, seconds."
    )


class DimensionGroups(StatusModel):
    """Communicator groups of the plan's rank layout, per parallelism dimension."""

    tensor: int = Field(default=0, ge=0, le=MAX_WORLD_SIZE, description="Tensor groups.")
    context: int = Field(default=0, ge=0, le=MAX_WORLD_SIZE, description="Context groups.")
    expert: int = Field(default=0, ge=0, le=MAX_WORLD_SIZE, description="Expert groups.")
    data: int = Field(default=0, ge=0, le=MAX_WORLD_SIZE, description="Data groups.")
    pipeline: int = Field(default=0, ge=0, le=MAX_WORLD_SIZE, description="Pipeline groups.")


class Prediction(StatusModel):
    """The cost model's prediction for the chosen placement, and the plan's fabric facts."""

    step_comm_seconds: float = Field(
        ge=0,
        le=MAX_SECONDS,
        description="Communication seconds per training step (serving: on the path to a first "
        "token, the sum of the three phases below that the role runs).",
    )
    decode_token_comm_seconds: float | None = Field(
        default=None, ge=0, le=MAX_SECONDS, description="Serving: one decode step (per token)."
    )
    prefill_comm_seconds: float | None = Field(
        default=None, ge=0, le=MAX_SECONDS, description="Serving: one prefill."
    )
    kv_transfer_seconds: float | None = Field(
        default=None,
        ge=0,
        le=MAX_SECONDS,
        description="Serving: a request's KV cache to or from the pairedWith partner's plan.",
    )
    by_dimension: DimensionSeconds = Field(
        default_factory=DimensionSeconds, description="Seconds per parallelism dimension."
    )
    groups: DimensionGroups | None = Field(
        default=None, description="Communicator groups per parallelism dimension."
    )
    spine_bytes_per_step: float | None = Field(
        default=None, ge=0, le=MAX_BYTES, description="Bytes one step sends across the spine."
    )
    tensor_groups_crossing_nvlink: int | None = Field(
        default=None,
        ge=0,
        le=MAX_WORLD_SIZE,
        description="Tensor groups whose ranks sit in more than one NVLink domain.",
    )
    data_groups_crossing_rail_group: int | None = Field(
        default=None,
        ge=0,
        le=MAX_WORLD_SIZE,
        description="Data groups spread over nodes that do not share one rail group.",
    )
    alone_step_comm_seconds: float | None = Field(
        default=None,
        ge=0,
        le=MAX_SECONDS,
        description=(
            "Communication seconds per step without the running jobs' traffic (the cost "
            "model's price of the placement alone)."
        ),
    )
    neighbour_slowdown_seconds: float | None = Field(
        default=None,
        ge=0,
        le=MAX_SECONDS,
        description=(
            "Seconds per step the links this job shares with the jobs running when it was "
            "planned add to its communication (included in stepCommSeconds)."
        ),
    )
    slowdown_added_to_others_seconds: float | None = Field(
        default=None,
        ge=0,
        le=MAX_SECONDS,
        description=(
            "Seconds per step this job adds to the running jobs' communication, summed over "
            "them, as priced when it was planned."
        ),
    )


class GpuAllocation(StatusModel):
    """How the pods get their GPUs when that is through Dynamic Resource Allocation."""

    via: str = Field(
        default="DynamicResourceAllocation",
        max_length=64,
        description="How the GPUs are handed out: DynamicResourceAllocation.",
    )
    device_class: str = Field(
        max_length=253, description="DeviceClass the pods' claims ask for (gpu.nvidia.com)."
    )
    claims: tuple[
        Annotated[str, Field(max_length=317, description="Kind/name of one claim source.")], ...
    ] = Field(
        default=(),
        max_length=16,
        description="Kind/name of the ResourceClaimTemplates and ResourceClaims asking for GPUs.",
    )
    message: str = Field(
        max_length=1024,
        description="Who picks the devices: fabricfit pins each pod's node, kube-scheduler's DRA "
        "allocator picks the GPUs on it.",
    )


ComputeDomainState = Literal["Ready", "NotReady", "Pending", "Unavailable", "Refused"]


class ComputeDomainReport(StatusModel):
    """The ComputeDomain (NVIDIA DRA driver, ``resource.nvidia.com``) a plan whose groups span
    trays of one NVLink domain needs, and whether the pods claim its channel."""

    name: str = Field(min_length=1, max_length=253, description="ComputeDomain name.")
    num_nodes: int = Field(ge=1, le=MAX_PODS, description="Nodes of the job (spec.numNodes).")
    channel_template: str = Field(
        min_length=1, max_length=253, description="ResourceClaimTemplate of its IMEX channel."
    )
    state: ComputeDomainState = Field(
        description=(
            "Ready/NotReady as the driver reports it, Pending before it does, Unavailable when "
            "the ComputeDomain CRD is not installed, Refused when the API server refused it."
        )
    )
    claimed: bool = Field(description="Whether the rank template claims the channel template.")
    groups: str = Field(
        default="", max_length=256, description="The groups that span trays, in words."
    )


class SpareReport(StatusModel):
    """The spare nodes a plan leaves free in each multi-node NVLink domain (placement.spares)."""

    per_nvlink_domain: int = Field(
        ge=1, le=1024, description="Spare nodes kept free per NVLink domain."
    )
    source: str = Field(
        max_length=80,
        description="Where that number comes from: spec.placement.spares or fabric <profile>.",
    )
    nodes: tuple[NodeName, ...] = Field(
        default=(),
        max_length=MAX_PODS,
        json_schema_extra={"x-kubernetes-list-type": "set"},
        description="The spare nodes, sorted, as of the last plan or re-placement.",
    )


class TrainingTopologyStatus(StatusModel):
    """Status of a TrainingTopology: conditions, the plan, its reservation and prediction."""

    observed_generation: int | None = Field(
        default=None, ge=0, le=MAX_GENERATION, description="Last metadata.generation reconciled."
    )
    conditions: tuple[Condition, ...] = Field(
        default=(),
        max_length=MAX_CONDITIONS,
        json_schema_extra=_map_list("type"),
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
        json_schema_extra=_map_list("index"),
        description="The planned node of each pod.",
    )
    reservation: tuple[NodeReservation, ...] = Field(
        default=(),
        max_length=MAX_PODS,
        json_schema_extra=_map_list("node"),
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
        json_schema_extra=_DATE_TIME,
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
