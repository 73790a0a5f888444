"""What the placement engine is asked to place: a frozen ``PlacementRequest``.

Theory of operation
-------------------
The CRD spec (pydantic, validated at the boundary) says how the job is parallelised; the
workload's own pod template says where its pods may run (nodeSelector, required node affinity,
tolerations). ``request_from_spec`` folds both into one frozen value, so the core never sees a
pydantic model or a raw pod template again. Pod-template parsing is lenient about shape (missing
sections mean "no constraint") and strict about content: an unknown affinity operator is a
:class:`TemplateError` (a ``ValueError``) with one clear sentence, because silently ignoring it
would place pods where the workload forbids them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fabricfit.api.constants import GPU_CHOICE_ENFORCED, GPU_CHOICE_NOT_ENFORCED
from fabricfit.api.models import ModelShape, Parallelism, TrainingTopologySpec
from fabricfit.api.serving import ServingSpec
from fabricfit.fabric.objects import kind_of, shorten
from fabricfit.fabric.podclaims import claim_names
from fabricfit.fabric.pods import pod_gpu_request
from fabricfit.placement.pairing import Partner

DEVICE_PLUGIN = "device-plugin"
DRA = "dra"
# Who decides which GPUs of a node a pod runs on (``gpuChoice`` in plan --json and status):
# ENFORCED, fabricfit (it allocates each pod's DRA claim the devices it planned); NOT_ENFORCED,
# the device plugin or kube-scheduler's allocator, so the plan is priced on what they hand out.
ENFORCED = GPU_CHOICE_ENFORCED
NOT_ENFORCED = GPU_CHOICE_NOT_ENFORCED
GPU_CHOICES = (ENFORCED, NOT_ENFORCED)
AFFINITY_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
TOLERATION_OPERATORS = ("Equal", "Exists")


class TemplateError(ValueError):
    """The workload's pod template says something about placement that cannot be read."""


@dataclass(frozen=True, slots=True)
class MatchExpression:
    """One node-selector requirement on a label (``key`` ``operator`` ``values``)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SelectorTerm:
    """A nodeSelectorTerm: all expressions must hold (terms are ORed)."""

    expressions: tuple[MatchExpression, ...] = ()
    fields: tuple[MatchExpression, ...] = ()


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


def _empty_labels() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """One job to place: its parallel layout, locality requirements and scheduling constraints."""

    parallelism: Parallelism
    gpus_per_pod: int = 8
    rank_order: str = "tp-cp-ep-dp-pp"
    model: ModelShape = field(default_factory=ModelShape)
    tensor_required: bool = True
    data_required: bool = False
    fabric: str | None = None
    # Spare nodes per multi-node NVLink domain (placement.spares); None: the profile's setting.
    spares_per_domain: int | None = None
    node_selector: Mapping[str, str] = field(default_factory=_empty_labels)
    affinity: tuple[SelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    # How the pods get their GPUs: DEVICE_PLUGIN (nvidia.com/gpu requests), DRA (resource
    # claims, no nvidia.com/gpu request) or None (unknown: no pod template, or it asks for none);
    # a pod can only run on a node whose GPUs come the same way.
    gpu_source: str | None = None
    # A served model (priced per token, placed per replica) and, for one side of a
    # disaggregated deployment planned second, where its partner's pods are.
    serving: ServingSpec | None = None
    partner: Partner | None = None
    gpu_choice: str = NOT_ENFORCED
    # RDMA NICs (dranet) each pod's claims ask for next to its GPUs, chosen on the GPUs' PCIe
    # roots when the choice is enforced (0: none asked for).
    nics_per_pod: int = 0
    # Seconds one training step computes, when the job declares it (a trace's duration over its
    # steps); None: derived from the model and the fabric's peak FLOP/s (contention.duty).
    compute_seconds_per_step: float | None = None

    @property
    def world_size(self) -> int:
        return self.parallelism.world_size

    @property
    def pods(self) -> int:
        return -(-self.world_size // self.gpus_per_pod)


def request_from_spec(
    spec: TrainingTopologySpec, pod_template: Mapping[str, Any] | None = None
) -> PlacementRequest:
    """Build a request from a TrainingTopology spec and, optionally, the workload's pod template
    (``{metadata, spec}`` or a bare pod spec)."""
    pod_spec = _pod_spec(pod_template)
    return PlacementRequest(
        parallelism=spec.parallelism,
        gpus_per_pod=spec.gpus_per_pod,
        rank_order=spec.rank_order,
        model=spec.model or ModelShape(),
        tensor_required=spec.placement.tensor == "Required",
        data_required=spec.placement.data == "Required",
        fabric=spec.fabric,
        spares_per_domain=(
            spec.placement.spares.nodes_per_nvlink_domain if spec.placement.spares else None
        ),
        node_selector=MappingProxyType(
            dict(_mapping(pod_spec.get("nodeSelector"), "nodeSelector"))
        ),
        affinity=parse_required_affinity(pod_spec.get("affinity")),
        tolerations=parse_tolerations(pod_spec.get("tolerations")),
        gpu_source=gpu_source(pod_spec),
        serving=spec.serving,
    )


def gpu_source(pod_spec: Mapping[str, Any]) -> str | None:
    """DEVICE_PLUGIN when the pod requests nvidia.com/gpu, else DRA when it lists resource
    claims (a pod that claims devices and requests no GPU gets its GPUs from a claim), else
    None."""
    pod = {"spec": pod_spec}
    if pod_gpu_request(pod, []) > 0:
        return DEVICE_PLUGIN
    return DRA if claim_names(pod) else None


def _pod_spec(pod_template: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not pod_template:
        return {}
    inner = pod_template.get("spec")
    if "containers" in pod_template:
        return pod_template
    if inner is None:
        return pod_template
    if not isinstance(inner, Mapping):
        raise TemplateError(f"spec is {kind_of(inner)}, not a mapping")
    return inner


def _mapping(value: object, what: str) -> Mapping[str, str]:
    """A string → string map (nodeSelector): Kubernetes takes nothing else."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TemplateError(f"{what} is {kind_of(value)}, not a mapping")
    out: dict[str, str] = {}
    for key, item in value.items():
        out[_string(key, f"a {what} key")] = _string(item, f"{what}[{shorten(key)}]")
    return out


def _string(value: object, what: str, default: str | None = None) -> str:
    """``value`` when it is a string (``default`` when absent); otherwise a TemplateError that
    names ``what`` and the kind of value found — never its text (it may be huge)."""
    if value is None and default is not None:
        return default
    if not isinstance(value, str):
        raise TemplateError(f"{what} must be a string, got {shorten(value)}")
    return value


def _sequence(value: object, what: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise TemplateError(f"{what} is {kind_of(value)}, not a list")
    return value


def parse_required_affinity(affinity: object) -> tuple[SelectorTerm, ...]:
    """The required nodeSelectorTerms of a pod's ``affinity`` (preferred terms are ignored)."""
    if not isinstance(affinity, Mapping):
        return ()
    node_affinity = affinity.get("nodeAffinity")
    if not isinstance(node_affinity, Mapping):
        return ()
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return ()
    terms = _sequence(required.get("nodeSelectorTerms"), "nodeSelectorTerms")
    return tuple(_parse_term(term) for term in terms)


def _parse_term(term: object) -> SelectorTerm:
    if not isinstance(term, Mapping):
        raise TemplateError(f"a nodeSelectorTerm is {kind_of(term)}, not a mapping")
    return SelectorTerm(
        expressions=tuple(
            _parse_expression(e)
            for e in _sequence(term.get("matchExpressions"), "matchExpressions")
        ),
        fields=tuple(
            _parse_expression(e) for e in _sequence(term.get("matchFields"), "matchFields")
        ),
    )


def _parse_expression(expression: object) -> MatchExpression:
    if not isinstance(expression, Mapping) or "key" not in expression:
        raise TemplateError("a node-selector requirement needs a key and an operator")
    operator = _string(expression.get("operator"), "a node-selector operator", "")
    if operator not in AFFINITY_OPERATORS:
        raise TemplateError(
            f"unknown node-affinity operator {shorten(operator)} (expected one of "
            f"{', '.join(AFFINITY_OPERATORS)})"
        )
    values = tuple(
        _string(v, "a node-selector value") for v in _sequence(expression.get("values"), "values")
    )
    key = _string(expression["key"], "a node-selector key")
    return MatchExpression(key=key, operator=operator, values=values)


def parse_tolerations(tolerations: object) -> tuple[Toleration, ...]:
    """A pod's tolerations as frozen values."""
    parsed: list[Toleration] = []
    for item in _sequence(tolerations, "tolerations"):
        if not isinstance(item, Mapping):
            raise TemplateError(f"a toleration is {kind_of(item)}, not a mapping")
        operator = _string(item.get("operator"), "a toleration operator", "") or "Equal"
        if operator not in TOLERATION_OPERATORS:
            raise TemplateError(f"unknown toleration operator {shorten(operator)}")
        parsed.append(
            Toleration(
                key=_string(item.get("key"), "a toleration key", ""),
                operator=operator,
                value=_string(item.get("value"), "a toleration value", ""),
                effect=_string(item.get("effect"), "a toleration effect", ""),
            )
        )
    return tuple(parsed)
