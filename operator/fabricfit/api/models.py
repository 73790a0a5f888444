"""Pydantic models of the TrainingTopology spec and status: the CRD boundary.

Field names in YAML/JSON are camelCase (Kubernetes convention); Python attributes are snake_case.
Models are frozen and reject unknown fields, so a typo in a spec is an error, not a silent default.
The CRD schema in ``crds/`` is generated from these models (``fabricfit crd``); bounds declared
here are enforced twice: by the API server (schema) and by pydantic when the operator or the CLI
parses a spec. Cross-field checks live in ``rules.py`` as CEL rules attached here through
``json_schema_extra``; pydantic does not run them (a bare ``TrainingTopologySpec()`` stays
constructible), so offline callers ask ``rules.violations(spec)``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from fabricfit.api.base import SpecModel
from fabricfit.api.constants import DEFAULT_RANK_ORDER
from fabricfit.api.rules import (
    MODEL_SHAPE_RULES,
    PARALLELISM_RULES,
    PLACEMENT_RULES,
    SPEC_RULES,
    WORKLOAD_REF_RULES,
)
from fabricfit.api.serving import ServingSpec

MAX_PARALLELISM = 65536
MAX_GPUS_PER_POD = 64
# Far above any real node (time-sliced GPUs advertise replicas × GPUs), low enough to catch
# "8k" or "8Gi" typos in a node's capacity; a plan never holds more on one node.
MAX_GPUS_PER_NODE = 4096
MAX_HEADS = 65_536
MAX_HEAD_DIM = 65_536
DEFAULT_HEAD_DIM = 128
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
RANK_ORDER_PATTERN = r"^(tp|cp|ep|dp|pp)(-(tp|cp|ep|dp|pp)){4}$"
# A DNS subdomain (RFC 1123) or the empty string (the default of workloadRef.name).
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
OPTIONAL_DNS_SUBDOMAIN_PATTERN = rf"^({_DNS_SUBDOMAIN})?$"
# A label key: optional DNS-subdomain prefix and "/", then a name of 1-63 characters.
LABEL_KEY_PATTERN = rf"^({_DNS_SUBDOMAIN}/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
API_VERSION_PATTERN = rf"^({_DNS_SUBDOMAIN}/)?v[0-9]+((alpha|beta)[0-9]+)?$"
KIND_PATTERN = r"^[A-Z][A-Za-z0-9]*$"
LabelValue = Annotated[
    str, StringConstraints(max_length=63, pattern=r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
]


class WorkloadRef(SpecModel):
    """The workload whose pods carry the ranks: an Indexed Job, JobSet, PyTorchJob,
    LeaderWorkerSet, or plain Pods selected by label (``kind: Pod``)."""

    model_config = ConfigDict(json_schema_extra=WORKLOAD_REF_RULES)

    api_version: str = Field(
        min_length=1,
        max_length=253,
        pattern=API_VERSION_PATTERN,
        description="apiVersion of the workload, e.g. batch/v1.",
    )
    kind: str = Field(
        min_length=1,
        max_length=63,
        pattern=KIND_PATTERN,
        description="Kind of the workload.",
    )
    name: str = Field(
        default="",
        max_length=253,
        pattern=OPTIONAL_DNS_SUBDOMAIN_PATTERN,
        description="Name of the workload (empty for kind Pod, which uses podSelector).",
    )
    pod_selector: dict[str, LabelValue] | None = Field(
        default=None,
        max_length=16,
        description="For kind Pod: labels selecting the workload's pods.",
    )
    index_label: str | None = Field(
        default=None,
        max_length=317,
        pattern=LABEL_KEY_PATTERN,
        description="For kind Pod: the pod label that carries the pod's index (0..pods-1).",
    )


class Parallelism(SpecModel):
    """Sizes of the parallelism dimensions. World size = tensor·pipeline·data·context; expert
    parallelism is carved out of data parallelism, so expert must divide data."""

    model_config = ConfigDict(json_schema_extra=PARALLELISM_RULES)

    tensor: int = Field(
        default=1, ge=1, le=MAX_PARALLELISM, description="Tensor-parallel group size."
    )
    pipeline: int = Field(
        default=1, ge=1, le=MAX_PARALLELISM, description="Number of pipeline stages."
    )
    data: int = Field(default=1, ge=1, le=MAX_PARALLELISM, description="Data-parallel replicas.")
    expert: int = Field(
        default=1,
        ge=1,
        le=MAX_PARALLELISM,
        description="Expert-parallel group size (divides data).",
    )
    context: int = Field(
        default=1, ge=1, le=MAX_PARALLELISM, description="Context-parallel group size."
    )

    @property
    def world_size(self) -> int:
        return self.tensor * self.pipeline * self.data * self.context


class ModelShape(SpecModel):
    """The model being trained; drives message sizes. All fields optional with defaults that
    describe a mid-size dense transformer."""

    model_config = ConfigDict(json_schema_extra=MODEL_SHAPE_RULES)

    parameters: int = Field(default=7_000_000_000, ge=1, le=10**15, description="Total parameters.")
    hidden_size: int = Field(default=4096, ge=1, le=1_048_576, description="Hidden dimension.")
    layers: int = Field(default=32, ge=1, le=100_000, description="Transformer layers.")
    sequence_length: int = Field(
        default=4096, ge=1, le=16_777_216, description="Tokens per sequence."
    )
    micro_batch_size: int = Field(
        default=1, ge=1, le=65_536, description="Sequences per micro-batch."
    )
    micro_batches: int = Field(
        default=8, ge=1, le=1_048_576, description="Micro-batches per step (per pipeline)."
    )
    bytes_per_element: int = Field(
        default=2, ge=1, le=8, description="Bytes per activation/gradient element."
    )
    experts: int = Field(
        default=0, ge=0, le=65_536, description="Experts per MoE layer (0 = dense)."
    )
    top_k: int = Field(default=0, ge=0, le=1024, description="Experts each token is routed to.")
    zero_stage: int = Field(default=1, ge=0, le=3, description="ZeRO stage (3 = FSDP).")
    # The attention shape sizes the KV cache a disaggregated deployment moves (serving only).
    attention_heads: int | None = Field(
        default=None,
        ge=1,
        le=MAX_HEADS,
        description="Query heads per layer (default hiddenSize / headDim).",
    )
    kv_heads: int | None = Field(
        default=None,
        ge=1,
        le=MAX_HEADS,
        description="Key/value heads per layer: fewer than attentionHeads for grouped-query "
        "attention (default attentionHeads).",
    )
    head_dim: int | None = Field(
        default=None,
        ge=1,
        le=MAX_HEAD_DIM,
        description="Dimension of one attention head (default hiddenSize / attentionHeads, or "
        "128 without attentionHeads).",
    )

    @property
    def head_dimension(self) -> int:
        """``headDim``, else hiddenSize / attentionHeads, else 128 (Llama's, Mistral's and
        Qwen's head size; at most hiddenSize)."""
        if self.head_dim is not None:
            return self.head_dim
        if self.attention_heads is not None:
            return max(1, self.hidden_size // self.attention_heads)
        return min(DEFAULT_HEAD_DIM, self.hidden_size)

    @property
    def key_value_heads(self) -> int:
        """``kvHeads``, else ``attentionHeads`` (multi-head attention), else
        hiddenSize / the head dimension."""
        if self.kv_heads is not None:
            return self.kv_heads
        if self.attention_heads is not None:
            return self.attention_heads
        return max(1, self.hidden_size // self.head_dimension)


MAX_SPARE_NODES_PER_DOMAIN = 1024
#: Model fields only a training step reads (a serving spec leaves them out of ``defaulted``).
TRAINING_ONLY_FIELDS = (
    "parameters",
    "sequence_length",
    "micro_batch_size",
    "micro_batches",
    "zero_stage",
)
#: Model fields only serving reads, absent (None) unless given.
SERVING_ONLY_FIELDS = ("attention_heads", "kv_heads", "head_dim")


class SparePolicy(SpecModel):
    """Nodes (trays) of every multi-node NVLink domain this job's plan leaves free as spares:
    ordinary placement never uses them; a re-placement after a failure or a maintenance
    cordon takes one of the same domain first."""

    nodes_per_nvlink_domain: int = Field(
        ge=0,
        le=MAX_SPARE_NODES_PER_DOMAIN,
        description=(
            "Nodes of each multi-node NVLink domain kept free (overrides the fabric "
            "profile's spare_nodes_per_nvlink_domain; 0 keeps none)."
        ),
    )


#: Queue policies, by the names ``placement.queuePolicy``, ``fabricfit run --queue-policy`` and
#: ``fabricfit simulate --queue-policy`` take (``placement.waiting``), the default first.
QUEUE_POLICIES: Final = ("strict-fifo", "wait-if-faster")
QueuePolicyName = Literal["strict-fifo", "wait-if-faster"]


class PlacementPolicy(SpecModel):
    """How the plan is applied and which locality goals are hard requirements."""

    model_config = ConfigDict(json_schema_extra=PLACEMENT_RULES)

    mode: Literal["pinned", "admission-check", "kueue-tas", "advisory"] = Field(
        default="pinned",
        description=(
            "pinned: per-pod node via scheduling gate; admission-check: as pinned, planned"
            " once Kueue reserved quota (AdmissionCheck fabricfit.dev/placement); kueue-tas:"
            " Kueue TAS annotations; advisory: report only."
        ),
    )
    tensor: Literal["Required", "Preferred"] = Field(
        default="Required", description="Keep each tensor-parallel group inside one NVLink domain."
    )
    data: Literal["Required", "Preferred"] = Field(
        default="Preferred", description="Keep data-parallel peers inside one rail group."
    )
    spares: SparePolicy | None = Field(
        default=None,
        description=(
            "Spare nodes per NVLink domain; when omitted the fabric profile's setting applies."
        ),
    )
    queue_policy: QueuePolicyName | None = Field(
        default=None,
        description=(
            "strict-fifo: answer Kueue's AdmissionCheck as soon as a placement is found;"
            " wait-if-faster: answer Retry while a placement that frees up soon (running jobs'"
            " ends from kueue.x-k8s.io/max-exec-time-seconds) would save more communication"
            " over the job's own declared run than the wait costs. admission-check mode only;"
            " when omitted the operator's --queue-policy applies."
        ),
    )


def _without_default(schema: dict[str, Any]) -> None:
    """Drop the default from a field's JSON schema (the CRD then leaves it unset)."""
    schema.pop("default", None)


class TrainingTopologySpec(SpecModel):
    """Spec of a TrainingTopology: which workload, how it is parallelised, and the model."""

    model_config = ConfigDict(json_schema_extra=SPEC_RULES)

    workload_ref: WorkloadRef | None = Field(
        default=None, description="The workload to place (required by the operator)."
    )
    gpus_per_pod: int = Field(
        default=8,
        ge=1,
        le=MAX_GPUS_PER_POD,
        # No default in the CRD: the operator must see that it was omitted, to take the
        # workload's GPU request instead (offline, without a workload, 8 applies).
        json_schema_extra=_without_default,
        description=(
            "GPUs each pod requests. When omitted the operator takes the workload's GPU "
            "request per pod; when given it must equal that request."
        ),
    )
    parallelism: Parallelism = Field(
        default_factory=Parallelism,
        description="Parallelism sizes; world size = tensor·pipeline·data·context.",
    )
    rank_order: str = Field(
        default=DEFAULT_RANK_ORDER,
        max_length=14,
        pattern=RANK_ORDER_PATTERN,
        description=(
            "Order of dimensions in the global rank, fastest first (Megatron: tp-cp-ep-dp-pp)."
        ),
    )
    model: ModelShape | None = Field(default=None, description="Model shape; drives message sizes.")
    fabric: str | None = Field(
        default=None,
        max_length=63,
        pattern=DNS_LABEL_PATTERN,
        description=(
            "Fabric preset or profile name; defaults to the node label or the operator default."
        ),
    )
    label_scheme: str = Field(
        default="auto",
        max_length=63,
        pattern=DNS_LABEL_PATTERN,
        description="Which node labels describe the fabric.",
    )
    queue_name: str | None = Field(
        default=None,
        max_length=63,
        pattern=DNS_LABEL_PATTERN,
        description="Kueue LocalQueue to submit to.",
    )
    placement: PlacementPolicy = Field(
        default_factory=PlacementPolicy,
        description="How the plan is applied and which locality goals are hard requirements.",
    )
    serving: ServingSpec | None = Field(
        default=None,
        description="Set for a model served for inference: priced per token, not per training "
        "step (see docs/concepts/serving.md).",
    )

    @model_validator(mode="after")
    def _check_rank_order(self) -> TrainingTopologySpec:
        dims = self.rank_order.split("-")
        if sorted(dims) != sorted(["tp", "cp", "ep", "dp", "pp"]):
            raise ValueError("rankOrder must name each of tp, cp, ep, dp, pp exactly once")
        return self

    @property
    def world_size(self) -> int:
        return self.parallelism.world_size

    def defaulted(self) -> dict[str, Any]:
        """The fields that size the job's traffic but the spec leaves out, by CRD name, with
        the values assumed for them: ``gpusPerPod`` (when no workload settled it), ``model``
        (a whole default model) or each ``model.*`` field not given. A training spec's model
        fields are those a step reads; a serving spec's those a token reads, the attention
        shape (``kvHeads``, ``headDim``) with the values it resolves to."""
        found: dict[str, Any] = {}
        if "gpus_per_pod" not in self.model_fields_set:
            found["gpusPerPod"] = self.gpus_per_pod
        model = self.model if self.model is not None else ModelShape()
        given = self.model.model_fields_set if self.model is not None else set()
        skipped = TRAINING_ONLY_FIELDS if self.serving is not None else SERVING_ONLY_FIELDS
        assumed: dict[str, Any] = {}
        for name, field in ModelShape.model_fields.items():
            if name not in given and name not in skipped and name != "attention_heads":
                assumed[field.alias or name] = getattr(model, name)
        if self.serving is not None:  # the attention shape the KV cache is sized with
            assumed.pop("kvHeads", None), assumed.pop("headDim", None)
            if "kv_heads" not in given:
                assumed["kvHeads"] = model.key_value_heads
            if not {"head_dim", "attention_heads"} & given:
                assumed["headDim"] = model.head_dimension
        if self.model is None:
            found["model"] = assumed
            return found
        found.update({f"model.{name}": value for name, value in assumed.items()})
        return found

    @property
    def pods(self) -> int:
        """Pods the workload needs (world size ÷ gpusPerPod, rounded up)."""
        return -(-self.world_size // self.gpus_per_pod)


def field_names_at(path: tuple[str | int, ...]) -> tuple[str, ...]:
    """The CRD field names of the object at ``path`` inside a spec (``("model",)``: the model
    shape's), for "did you mean"; empty when ``path`` leads to no object of these models."""
    model: type[BaseModel] | None = TrainingTopologySpec
    for part in path:
        fields = model.model_fields if model is not None else {}
        field = next((f for n, f in fields.items() if part in (f.alias, n)), None)
        model = _model_in(field.annotation) if field is not None else None
    if model is None:
        return ()
    return tuple(f.alias or n for n, f in model.model_fields.items())


def _model_in(annotation: object) -> type[BaseModel] | None:
    """The spec model ``annotation`` names (``ModelShape | None`` → ``ModelShape``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for m in map(_model_in, get_args(annotation)) if m is not None), None)
