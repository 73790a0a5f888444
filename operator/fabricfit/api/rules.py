"""CEL rules (``x-kubernetes-validations``) for the TrainingTopology spec's cross-field checks.

The API server evaluates these after defaulting, so fields with a schema default are always
present; optional fields without one (``model``, ``podSelector``, ``indexLabel``) are guarded
with ``has()``. Each rule is attached to the smallest object that holds every field it reads
(``models.py`` does that through ``json_schema_extra``), which keeps messages local and the
estimated cost tiny: every rule is O(1) except the ``workloadRef`` immutability rule, whose
cost is bounded by ``podSelector``'s ``maxProperties``.

Arithmetic is int64 in CEL and overflow is an evaluation error. Each dimension is at most
65536 (2^16), so ``tensor·pipeline·data`` (≤ 2^48) is safe but the full product is not; the
world-size rules first bound the partial product and rely on CEL's error-absorbing ``&&``/``||``;
the multiple-of-gpusPerPod rule stays silent when the pod limit is already exceeded, so an
oversized spec gets one clear message.
"""

from __future__ import annotations

from typing import Literal

from pydantic import JsonValue

#: Most pods one workload may have: ``status.pods`` and ``status.reservation`` must fit in one
#: etcd object (~1.5 MiB), and 4096 pods of 8 GPUs is already a 32,768-GPU job.
MAX_PODS = 4096

Reason = Literal["FieldValueInvalid", "FieldValueRequired", "FieldValueForbidden"]

_TPD = "self.parallelism.tensor * self.parallelism.pipeline * self.parallelism.data"
_WORLD = f"{_TPD} * self.parallelism.context"
_POD_LIMIT = f"{MAX_PODS} * self.gpusPerPod"


def validation(
    rule: str,
    message: str,
    field_path: str | None = None,
    reason: Reason | None = None,
) -> dict[str, JsonValue]:
    """One ``x-kubernetes-validations`` entry (keys in the order kubectl shows them)."""
    entry: dict[str, JsonValue] = {"rule": rule, "message": message}
    if field_path is not None:
        entry["fieldPath"] = field_path
    if reason is not None:
        entry["reason"] = reason
    return entry


def validations(*entries: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The ``json_schema_extra`` that attaches ``entries`` to a model's schema node."""
    return {"x-kubernetes-validations": list(entries)}


WORKLOAD_REF_RULES = validations(
    validation(
        "self.kind == 'Pod' || (has(self.name) && size(self.name) > 0)",
        "workloadRef.name is required unless kind is Pod",
        ".name",
        "FieldValueRequired",
    ),
    validation(
        "self.kind != 'Pod' || (has(self.podSelector) && size(self.podSelector) > 0"
        " && has(self.indexLabel))",
        "a workloadRef of kind Pod needs podSelector (at least one label) and indexLabel",
        reason="FieldValueRequired",
    ),
    validation(
        "self.kind != 'Pod' || self.apiVersion == 'v1'",
        "kind Pod is served by apiVersion v1",
        ".apiVersion",
    ),
    validation(
        "self == oldSelf",
        "workloadRef is immutable: create a new TrainingTopology for another workload",
    ),
)

PARALLELISM_RULES = validations(
    validation(
        "self.data % self.expert == 0",
        "parallelism.expert must divide parallelism.data"
        " (expert-parallel groups are carved out of the data-parallel replicas)",
        ".expert",
    ),
)

MODEL_SHAPE_RULES = validations(
    validation(
        "self.experts == 0 || (self.topK >= 1 && self.topK <= self.experts)",
        "an MoE model (experts > 0) needs 1 <= topK <= experts",
        ".topK",
    ),
    validation(
        "self.experts > 0 || self.topK == 0",
        "topK applies only to MoE models (experts > 0)",
        ".topK",
        "FieldValueForbidden",
    ),
)

SPEC_RULES = validations(
    validation(
        "has(self.workloadRef)",
        "workloadRef is required: name the Job, JobSet, PyTorchJob, LeaderWorkerSet or Pods",
        ".workloadRef",
        "FieldValueRequired",
    ),
    validation(
        f"{_TPD} <= {_POD_LIMIT} && {_WORLD} <= {_POD_LIMIT}",
        f"a workload may have at most {MAX_PODS} pods:"
        f" tensor·pipeline·data·context must not exceed {MAX_PODS}·gpusPerPod",
        ".parallelism",
    ),
    validation(
        f"{_TPD} > {_POD_LIMIT} || {_WORLD} > {_POD_LIMIT} || ({_WORLD}) % self.gpusPerPod == 0",
        "the world size (tensor·pipeline·data·context) must be a multiple of gpusPerPod,"
        " so every pod carries a full block of ranks",
        ".gpusPerPod",
    ),
    validation(
        "!has(self.model) || self.model.experts == 0"
        " || self.model.experts % self.parallelism.expert == 0",
        "model.experts must be a multiple of parallelism.expert (every expert-parallel rank"
        " holds the same number of experts, so expert <= experts)",
        ".parallelism.expert",
    ),
    validation(
        "self.parallelism.expert == 1 || !has(self.model) || self.model.experts > 0",
        "parallelism.expert > 1 needs an MoE model (model.experts > 0)",
        ".parallelism.expert",
    ),
    validation(
        "!has(self.model) || self.model.layers >= self.parallelism.pipeline",
        "every pipeline stage needs at least one layer: model.layers >= parallelism.pipeline",
        ".parallelism.pipeline",
    ),
)
