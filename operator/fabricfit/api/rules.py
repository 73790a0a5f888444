"""CEL rules (``x-kubernetes-validations``) for the TrainingTopology spec's cross-field checks.

The API server evaluates these after defaulting, so fields with a schema default are always
present; optional fields without one (``model``, ``serving``, ``podSelector``, ``indexLabel``,
the attention shape) are guarded
with ``has()``. Each rule is attached to the smallest object that holds every field it reads
(``models.py`` does that through ``json_schema_extra``), which keeps messages local and the
estimated cost tiny: every rule is O(1) except the ``workloadRef`` immutability rule, whose
cost is bounded by ``podSelector``'s ``maxProperties``.

Arithmetic is int64 in CEL and overflow is an evaluation error. Each dimension is at most
65536 (2^16), so ``tensor·pipeline·data`` (≤ 2^48) is safe but the full product is not; the
world-size rules first bound the partial product and rely on CEL's error-absorbing ``&&``/``||``;
the multiple-of-gpusPerPod rule stays silent when the pod limit is already exceeded, so an
oversized spec gets one clear message.

Each rule also carries the same check in Python (``violations``), so the offline CLI can report
what the API server would reject; a test holds the two in agreement, case by case and over
random parallelism sizes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import JsonValue

if TYPE_CHECKING:
    from fabricfit.api.models import ModelShape, TrainingTopologySpec, WorkloadRef
    from fabricfit.api.serving import ServingSpec, ServingTargets

#: Most pods one workload may have: ``status.pods`` and ``status.reservation`` must fit in one
#: etcd object (~1.5 MiB), and 4096 pods of 8 GPUs is already a 32,768-GPU job.
MAX_PODS = 4096

Reason = Literal["FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden"]
Check = Callable[["TrainingTopologySpec"], bool]

_TPD = "self.parallelism.tensor * self.parallelism.pipeline * self.parallelism.data"
_WORLD = f"{_TPD} * self.parallelism.context"
_POD_LIMIT = f"{MAX_PODS} * self.gpusPerPod"


@dataclass(frozen=True)
class Rule:
    """One ``x-kubernetes-validations`` entry and its Python twin (None: transition rules)."""

    cel: str
    message: str
    field_path: str | None = None
    reason: Reason | None = None
    holds: Check | None = None
    # ``messageExpression``: the message with the spec's numbers (the API server falls back to
    # ``message`` should it fail), and its Python twin.
    message_expression: str | None = None
    explain: Callable[[TrainingTopologySpec], str] | None = None

    def entry(self) -> dict[str, JsonValue]:
        """The entry as the CRD carries it (keys in the order kubectl shows them)."""
        out: dict[str, JsonValue] = {"rule": self.cel, "message": self.message}
        if self.message_expression is not None:
            out["messageExpression"] = self.message_expression
        if self.field_path is not None:
            out["fieldPath"] = self.field_path
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def validations(*rules: Rule) -> dict[str, JsonValue]:
    """The ``json_schema_extra`` that attaches ``rules`` to a model's schema node."""
    return {"x-kubernetes-validations": [rule.entry() for rule in rules]}


def _on_ref(check: Callable[[WorkloadRef], bool]) -> Check:
    return lambda spec: spec.workload_ref is None or check(spec.workload_ref)


def _on_model(check: Callable[[ModelShape], bool]) -> Check:
    return lambda spec: spec.model is None or check(spec.model)


def _on_serving(check: Callable[[ServingSpec], bool]) -> Check:
    return lambda spec: spec.serving is None or check(spec.serving)


def _on_targets(check: Callable[[ServingTargets], bool]) -> Check:
    return _on_serving(lambda serving: serving.targets is None or check(serving.targets))


def _fits_pod_limit(spec: TrainingTopologySpec) -> bool:
    return spec.world_size <= MAX_PODS * spec.gpus_per_pod


def _gpus_per_pod_unset(spec: TrainingTopologySpec) -> bool:
    """``!has(self.gpusPerPod)``: the operator settles it from the workload, then checks."""
    return "gpus_per_pod" not in spec.model_fields_set


WORKLOAD_REF = (
    Rule(
        "self.kind == 'Pod' || (has(self.name) && size(self.name) > 0)",
        "workloadRef.name is required unless kind is Pod",
        ".name",
        "FieldValueRequired",
        _on_ref(lambda ref: ref.kind == "Pod" or bool(ref.name)),
    ),
    Rule(
        "self.kind != 'Pod' || (has(self.podSelector) && size(self.podSelector) > 0"
        " && has(self.indexLabel))",
        "a workloadRef of kind Pod needs podSelector (at least one label) and indexLabel",
        reason="FieldValueRequired",
        holds=_on_ref(
            lambda ref: (
                ref.kind != "Pod" or (bool(ref.pod_selector) and ref.index_label is not None)
            )
        ),
    ),
    Rule(
        "self.kind != 'Pod' || self.apiVersion == 'v1'",
        "kind Pod is served by apiVersion v1",
        ".apiVersion",
        holds=_on_ref(lambda ref: ref.kind != "Pod" or ref.api_version == "v1"),
    ),
    Rule(
        "self == oldSelf",
        "workloadRef is immutable: create a new TrainingTopology for another workload",
    ),
)

PARALLELISM = (
    Rule(
        "self.data % self.expert == 0",
        "parallelism.expert must divide parallelism.data"
        " (expert-parallel groups are carved out of the data-parallel replicas)",
        ".expert",
        holds=lambda spec: spec.parallelism.data % spec.parallelism.expert == 0,
    ),
)

MODEL_SHAPE = (
    Rule(
        "self.experts == 0 || (self.topK >= 1 && self.topK <= self.experts)",
        "an MoE model (experts > 0) needs 1 <= topK <= experts",
        ".topK",
        holds=_on_model(lambda m: m.experts == 0 or 1 <= m.top_k <= m.experts),
    ),
    Rule(
        "self.experts > 0 || self.topK == 0",
        "topK applies only to MoE models (experts > 0)",
        ".topK",
        "FieldValueForbidden",
        _on_model(lambda m: m.experts > 0 or m.top_k == 0),
    ),
    Rule(
        "!has(self.kvHeads) || !has(self.attentionHeads)"
        " || self.attentionHeads % self.kvHeads == 0",
        "model.kvHeads must divide model.attentionHeads (grouped-query attention: each"
        " key/value head serves attentionHeads / kvHeads query heads)",
        ".kvHeads",
        holds=_on_model(
            lambda m: (
                m.kv_heads is None
                or m.attention_heads is None
                or m.attention_heads % m.kv_heads == 0
            )
        ),
    ),
    Rule(
        "!has(self.attentionHeads) || has(self.headDim)"
        " || self.hiddenSize % self.attentionHeads == 0",
        "model.attentionHeads must divide model.hiddenSize (the head dimension is"
        " hiddenSize / attentionHeads) unless model.headDim is given",
        ".attentionHeads",
        holds=_on_model(
            lambda m: (
                m.attention_heads is None
                or m.head_dim is not None
                or m.hidden_size % m.attention_heads == 0
            )
        ),
    ),
)

SERVING = (
    Rule(
        "!has(self.pairedWith) || self.role != 'replica'",
        "serving.pairedWith links the prefill and the decode TrainingTopology of one"
        " deployment: it needs role prefill or decode",
        ".pairedWith",
        "FieldValueForbidden",
        _on_serving(lambda s: s.paired_with is None or s.role != "replica"),
    ),
)

SERVING_TARGETS = (
    Rule(
        "has(self.timePerOutputTokenSeconds) || has(self.timeToFirstTokenSeconds)",
        "serving.targets needs timePerOutputTokenSeconds or timeToFirstTokenSeconds",
        reason="FieldValueRequired",
        holds=_on_targets(
            lambda t: (
                t.time_per_output_token_seconds is not None
                or t.time_to_first_token_seconds is not None
            )
        ),
    ),
)

PLACEMENT = (
    Rule(
        "!has(self.queuePolicy) || self.queuePolicy != 'wait-if-faster'"
        " || (has(self.mode) && self.mode == 'admission-check')",
        "placement.queuePolicy wait-if-faster needs placement.mode admission-check: fabricfit"
        " holds a job by answering Kueue's AdmissionCheck with Retry",
        ".queuePolicy",
        holds=lambda spec: (
            spec.placement.queue_policy != "wait-if-faster"
            or spec.placement.mode == "admission-check"
        ),
    ),
)

#: The one rule ``fabricfit plan`` may waive: a what-if needs no workload.
WORKLOAD_REQUIRED = Rule(
    "has(self.workloadRef)",
    "workloadRef is required: name the Job, JobSet, PyTorchJob, LeaderWorkerSet or Pods",
    ".workloadRef",
    "FieldValueRequired",
    lambda spec: spec.workload_ref is not None,
)

SPEC = (
    WORKLOAD_REQUIRED,
    # Without gpusPerPod the operator takes it from the workload and checks these itself.
    Rule(
        f"!has(self.gpusPerPod) || {_TPD} <= {_POD_LIMIT} && {_WORLD} <= {_POD_LIMIT}",
        f"a workload may have at most {MAX_PODS} pods:"
        f" tensor·pipeline·data·context must not exceed {MAX_PODS}·gpusPerPod",
        ".parallelism",
        holds=lambda spec: _gpus_per_pod_unset(spec) or _fits_pod_limit(spec),
    ),
    Rule(
        f"!has(self.gpusPerPod) || {_TPD} > {_POD_LIMIT} || {_WORLD} > {_POD_LIMIT}"
        f" || ({_WORLD}) % self.gpusPerPod == 0",
        "the world size (tensor·pipeline·data·context) must be a multiple of gpusPerPod,"
        " so every pod carries a full block of ranks",
        ".gpusPerPod",
        holds=lambda spec: (
            _gpus_per_pod_unset(spec)
            or not _fits_pod_limit(spec)
            or spec.world_size % spec.gpus_per_pod == 0
        ),
        # Evaluated only when the rule fails, so within the pod limit: no int64 overflow.
        # format(), not string(): the API server estimates string(int) as unbounded and refuses
        # the CRD; format is CEL's strings extension v2, served since Kubernetes 1.29
        # (k8s.io/apiserver@v0.36.3/pkg/cel/environment/base.go:125-128).
        message_expression=(
            "'world size tensor·pipeline·data·context = %d·%d·%d·%d = %d is not a multiple"
            " of gpusPerPod %d: every pod must carry a full block of ranks'.format(["
            "self.parallelism.tensor, self.parallelism.pipeline, self.parallelism.data,"
            f" self.parallelism.context, {_WORLD}, self.gpusPerPod])"
        ),
        explain=lambda spec: (
            f"world size tensor·pipeline·data·context = {spec.parallelism.tensor}"
            f"·{spec.parallelism.pipeline}·{spec.parallelism.data}·{spec.parallelism.context}"
            f" = {spec.world_size} is not a multiple of gpusPerPod {spec.gpus_per_pod}:"
            " every pod must carry a full block of ranks"
        ),
    ),
    Rule(
        "!has(self.model) || self.model.experts == 0"
        " || self.model.experts % self.parallelism.expert == 0",
        "model.experts must be a multiple of parallelism.expert (every expert-parallel rank"
        " holds the same number of experts, so expert <= experts)",
        ".parallelism.expert",
        holds=lambda spec: (
            spec.model is None
            or spec.model.experts == 0
            or spec.model.experts % spec.parallelism.expert == 0
        ),
    ),
    Rule(
        "self.parallelism.expert == 1 || !has(self.model) || self.model.experts > 0",
        "parallelism.expert > 1 needs an MoE model (model.experts > 0)",
        ".parallelism.expert",
        holds=lambda spec: (
            spec.parallelism.expert == 1 or spec.model is None or spec.model.experts > 0
        ),
    ),
    Rule(
        "!has(self.model) || self.model.layers >= self.parallelism.pipeline",
        "every pipeline stage needs at least one layer: model.layers >= parallelism.pipeline",
        ".parallelism.pipeline",
        holds=lambda spec: spec.model is None or spec.model.layers >= spec.parallelism.pipeline,
    ),
    Rule(
        "!has(self.serving) || self.parallelism.context == 1",
        "serving does not model context parallelism: parallelism.context must be 1 with"
        " spec.serving",
        ".parallelism.context",
        holds=lambda spec: spec.serving is None or spec.parallelism.context == 1,
    ),
    Rule(
        "!has(self.serving) || self.parallelism.pipeline == 1 || self.rankOrder.endsWith('dp')",
        "with spec.serving and pipeline parallelism, rankOrder must end with dp (e.g."
        " tp-cp-ep-pp-dp): each replica's ranks must be consecutive, one LeaderWorkerSet group"
        " per replica",
        ".rankOrder",
        holds=lambda spec: (
            spec.serving is None or spec.parallelism.pipeline == 1 or spec.rank_order.endswith("dp")
        ),
    ),
)

WORKLOAD_REF_RULES = validations(*WORKLOAD_REF)
PARALLELISM_RULES = validations(*PARALLELISM)
MODEL_SHAPE_RULES = validations(*MODEL_SHAPE)
PLACEMENT_RULES = validations(*PLACEMENT)
SPEC_RULES = validations(*SPEC)
SERVING_RULES = validations(*SERVING)
SERVING_TARGET_RULES = validations(*SERVING_TARGETS)
ALL_RULES = (
    *SPEC,
    *WORKLOAD_REF,
    *PARALLELISM,
    *MODEL_SHAPE,
    *SERVING,
    *SERVING_TARGETS,
    *PLACEMENT,
)


def violations(spec: TrainingTopologySpec, *, require_workload: bool = True) -> list[str]:
    """Messages of the (non-transition) CEL rules ``spec`` breaks, as the API server would
    report them; empty when the API server would accept the spec. ``require_workload=False``
    waives :data:`WORKLOAD_REQUIRED` (offline what-if plans)."""
    return [
        rule.explain(spec) if rule.explain is not None else rule.message
        for rule in ALL_RULES
        if rule.holds is not None
        and not rule.holds(spec)
        and (require_workload or rule is not WORKLOAD_REQUIRED)
    ]
