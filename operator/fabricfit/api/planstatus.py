"""The plan as ``status`` reports it: the pods' nodes and devices, the reservation, the
prediction per dimension (alone, next to the running jobs, per served token), how the pods get
their GPUs, the ComputeDomain and the spares (pydantic models, read by the CRD generator)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from fabricfit.api.models import MAX_GPUS_PER_NODE, MAX_GPUS_PER_POD
from fabricfit.api.rules import MAX_PODS
from fabricfit.api.statusbase import (
    MAX_BYTES,
    MAX_SECONDS,
    MAX_WORLD_SIZE,
    NodeName,
    StatusModel,
)

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
