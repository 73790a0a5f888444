"""The one path from a TrainingTopology spec and its workload to a ``PlacementRequest`` (pure).

Theory of operation
-------------------
The operator (``reconcile``) and ``fabricfit plan`` must decide alike on the same input, so both
call this module and nothing else to turn user input into what the planner reads:

1. :func:`parse_spec` — the spec through pydantic (the CRD's schema: types, ranges, patterns),
   then the CRD's CEL rules (:func:`fabricfit.api.rules.violations`: world size a multiple of
   ``gpusPerPod``, at most ``MAX_PODS`` pods, expert divides data, …) and the layout's own
   checks, *before* any search: a rejected spec costs microseconds, never a plan of millions of
   ranks. ``workloadRef`` is required by the operator; ``fabricfit plan`` may leave it out
   (``require_workload=False``) to ask "what if".
2. :func:`fabricfit.workloads.rank_template` — which pod template's constraints count, and
   :func:`settle_gpus_per_pod` — ``gpusPerPod`` from that template's GPU request when omitted
   (the CRD has no default for it), or a problem naming both numbers when they differ. The
   request is the template's ``nvidia.com/gpu`` plus the GPUs its resource claims ask for
   (:mod:`fabricfit.fabric.podclaims`, from the ResourceClaimTemplates and ResourceClaims
   given by (kind, name)); a claim whose GPU count cannot be known is a problem only when
   ``gpusPerPod`` must be derived from it, and a claim source not found only when nothing else
   gives the pod GPUs.
3. :func:`workload_problems` — the named workload must run as many pods as the spec needs.
4. :func:`build_request` — the frozen request (a malformed template is a problem, not a crash).
5. :func:`fabricfit.fabric.deviceask.device_ask` — for pods that claim their GPUs through DRA,
   whether fabricfit can allocate their claims itself (``gpu_choice`` enforced, with the NICs
   the claim asks for) or leaves the devices to kube-scheduler (not enforced, and priced so).

Every problem is one sentence that names the field and echoes at most a short prefix of the
value, in the words of a YAML document ("a mapping", "a number"), never a Python type name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError

from fabricfit.api.constants import GPU_RESOURCE
from fabricfit.api.models import TrainingTopologySpec, field_names_at
from fabricfit.api.rules import violations
from fabricfit.fabric.deviceask import DeviceAsk, device_ask
from fabricfit.fabric.names import suggestion
from fabricfit.fabric.objects import shorten
from fabricfit.fabric.podclaims import PodClaims, pod_claim_gpus
from fabricfit.fabric.pods import pod_gpu_request
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.profiles.catalog import Catalog
from fabricfit.fabric.profiles.choice import choose_profile
from fabricfit.fabric.schemes import NAMES as SCHEME_NAMES
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.constraints import usable_nodes
from fabricfit.placement.layout import validate_layout
from fabricfit.placement.request import DRA, PlacementRequest, TemplateError, request_from_spec
from fabricfit.workloads import KINDS, expected_pods, kind_named, pod_templates, rank_template

__all__ = [
    "Admission",
    "admit",
    "admit_workload",
    "build_request",
    "choose_fabric",
    "describe_validation_error",
    "parse_spec",
    "rank_template",
    "settle_gpus_per_pod",
    "workload_problems",
]

MAX_FIELD_ECHO = 60
ClaimObjects = Mapping[tuple[str, str], Mapping[str, Any]]


@dataclass(frozen=True)
class Admission:
    """A spec checked and turned into a request, or the problems that stop it."""

    spec: TrainingTopologySpec | None
    template: Mapping[str, Any] | None = None
    request: PlacementRequest | None = None
    problems: tuple[str, ...] = ()
    devices: DeviceAsk | None = None  # set when the pods claim their GPUs through DRA

    @property
    def message(self) -> str:
        """All problems as one line, as the ``Planned`` condition and the CLI show them."""
        return "; ".join(self.problems)


def admit(
    raw_spec: object,
    workload: Mapping[str, Any] | None,
    *,
    require_workload: bool = True,
    claims: ClaimObjects | None = None,
) -> Admission:
    """Steps 1–4 of the module docstring; stops at the first step that finds problems."""
    spec, problems = parse_spec(raw_spec, require_workload=require_workload)
    if spec is None or problems:
        return Admission(spec, problems=problems)
    return admit_workload(
        raw_spec, spec, workload, require_workload=require_workload, claims=claims
    )


def admit_workload(
    raw_spec: object,
    spec: TrainingTopologySpec,
    workload: Mapping[str, Any] | None,
    *,
    require_workload: bool = True,
    claims: ClaimObjects | None = None,
) -> Admission:
    """Steps 2–4 for a spec :func:`parse_spec` accepted (the operator parses first, to know
    which workload to read): ``gpusPerPod`` settled, the workload checked, the request built."""
    kind = spec.workload_ref.kind if spec.workload_ref is not None else ""
    template = rank_template(kind, workload)
    settled, problems = settle_gpus_per_pod(
        raw_spec, spec, template, require_workload=require_workload, claims=claims
    )
    if settled is None or problems:
        return Admission(spec, problems=problems)
    spec = settled
    problems = workload_problems(spec, workload)
    if problems:
        return Admission(spec, problems=problems)
    request, problem = build_request(spec, template)
    ask = None
    if request is not None and request.gpu_source == DRA:
        ask = device_ask(template, claims or {}, spec.gpus_per_pod)
        request = replace(request, gpu_choice=ask.choice, nics_per_pod=ask.nics)
    return Admission(spec, template, request, (problem,) if problem else (), ask)


def parse_spec(
    raw: object, *, require_workload: bool = True
) -> tuple[TrainingTopologySpec | None, tuple[str, ...]]:
    """The validated spec and every rule it breaks (empty: the API server and the planner
    would both accept it). A schema error stops at the first one, as pydantic reports it."""
    try:
        # CRD field names only: the API server knows no ``hidden_size`` (pydantic's by-name
        # population is for Python callers), so neither does a spec read from a document.
        spec = TrainingTopologySpec.model_validate(
            raw if raw is not None else {}, by_alias=True, by_name=False
        )
    except ValidationError as err:
        return None, (describe_validation_error(err),)
    if spec.label_scheme not in SCHEME_NAMES:  # the CRD's enum, from the scheme registry
        given = spec.label_scheme
        hint = suggestion(given, SCHEME_NAMES)
        choice = f"must be one of {_one_of(SCHEME_NAMES)}, got {shorten(given)}{hint}"
        return None, (f"spec.labelScheme: {choice}",)
    # The API server's verdict first; the layout's own checks only once it accepts the spec
    # (several restate a CEL rule in other words).
    problems = violations(spec, require_workload=require_workload)
    if not problems and "gpus_per_pod" in spec.model_fields_set:  # else: once it is settled
        problems = list(
            validate_layout(
                spec.parallelism,
                spec.gpus_per_pod,
                experts=spec.model.experts if spec.model else 0,
                tensor_required=spec.placement.tensor == "Required",
            )
        )
    return spec, tuple(dict.fromkeys(problems))


def settle_gpus_per_pod(
    raw: object,
    spec: TrainingTopologySpec,
    template: Mapping[str, Any] | None,
    *,
    require_workload: bool = True,
    claims: ClaimObjects | None = None,
) -> tuple[TrainingTopologySpec | None, tuple[str, ...]]:
    """``gpusPerPod`` from the rank template's GPU request (``nvidia.com/gpu`` plus resource
    claims) when the spec omits it (then every check of :func:`parse_spec` runs with it); a
    spec naming another number is a problem that gives both. A template without GPU requests
    (or none yet) leaves the spec as it is."""
    ref = spec.workload_ref
    plugin = pod_gpu_request(template, []) if template is not None else 0
    claimed = pod_claim_gpus(template, claims or {}) if template is not None else PodClaims()
    requested = plugin + claimed.gpus
    given = "gpus_per_pod" in spec.model_fields_set
    unknown = (*claimed.problems, *(claimed.missing if requested <= 0 else ()))
    if unknown and not given:
        return spec, (f"cannot tell the GPUs per pod: {'; '.join(unknown)}",)
    if requested <= 0:
        return spec, ()
    if given:
        if spec.gpus_per_pod == requested:
            return spec, ()
        workload = f"{ref.kind} {ref.name}" if ref is not None else "the workload"
        return spec, (
            f"gpusPerPod is {spec.gpus_per_pod} but {workload} requests "
            f"{_gpu_words(plugin, claimed)} per pod",
        )
    settled = {**(raw if isinstance(raw, Mapping) else {}), "gpusPerPod": requested}
    return parse_spec(settled, require_workload=require_workload)


def _gpu_words(plugin: int, claimed: PodClaims) -> str:
    """How a pod asks for its GPUs, for a message: ``nvidia.com/gpu`` and/or its claims."""
    if not claimed.gpus:
        return f"{plugin} {GPU_RESOURCE}"
    claims = f"through {', '.join(claimed.sources)}"
    if not plugin:
        return f"{claimed.gpus} GPUs {claims}"
    return f"{plugin + claimed.gpus} GPUs ({plugin} {GPU_RESOURCE}, {claimed.gpus} {claims})"


def workload_problems(
    spec: TrainingTopologySpec, workload: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """Problems of the workload the spec names, as found (None: not there yet, no problem)."""
    ref = spec.workload_ref
    if ref is None:
        return ()
    kind = kind_named(ref.kind)
    if kind is None:
        listed = suggestion(ref.kind, KINDS) or f" (supported: {', '.join(KINDS)})"
        return (f"workload kind {ref.kind} is not supported{listed}",)
    if spec.placement.mode == "admission-check" and not kind.admitted_as_workload:
        return (
            f"placement.mode admission-check is not available for a {ref.kind}: Kueue admits "
            "its pods through its pod integration, which fabricfit's AdmissionCheck does not "
            "follow (use pinned)",
        )
    if workload is None or kind.selects_pods:
        return ()
    if not pod_templates(ref.kind, workload):
        return (f"{ref.kind} {ref.name} has no pod template (or one that is not a mapping)",)
    expected = expected_pods(ref.kind, workload)
    if expected is not None and expected != spec.pods:
        return (
            f"{ref.kind} {ref.name} runs {expected} pods but the spec needs {spec.pods} "
            f"(world size {spec.world_size} / gpusPerPod {spec.gpus_per_pod})",
        )
    group = kind.group_pods(workload)
    replica = _replica_pods(spec)
    if spec.serving is not None and group is not None and group != replica:
        return (
            f"{ref.kind} {ref.name} groups {group} pods but a replica spans {replica} "
            f"(tensor·pipeline·expert / gpusPerPod): each group must hold one replica",
        )
    return ()


def _replica_pods(spec: TrainingTopologySpec) -> int:
    p = spec.parallelism
    return -(-(p.tensor * p.pipeline * p.expert * p.context) // spec.gpus_per_pod)


def choose_fabric(
    spec: TrainingTopologySpec,
    snapshot: ClusterSnapshot,
    default: str,
    *,
    catalog: Catalog | None = None,
    request: PlacementRequest | None = None,
    override: tuple[FabricProfile | str, str] | None = None,
) -> tuple[FabricProfile, str]:
    """The fabric a job is priced on, and why, for ``fabricfit plan`` and the operator alike:
    :func:`fabricfit.fabric.profiles.choice.choose_profile` (``override``: ``plan --fabric`` or
    ``--fabric-file``'s value and the flag's name; ``catalog`` the presets plus the custom
    profiles the process loaded). With the ``request``, the nodes that vote are those its pods
    may run on (a GB200 rack the job's nodeSelector keeps it off does not price an H100 job), or
    every node when none may."""
    voters = usable_nodes(snapshot.nodes, request) if request is not None else []
    requested, flag = override if override is not None else (None, "--fabric")
    choice = choose_profile(
        voters or snapshot.nodes,
        spec_fabric=spec.fabric,
        default=default,
        catalog=catalog or Catalog(),
        requested=requested,
        requested_by=flag,
    )
    return choice.profile, choice.reason


def build_request(
    spec: TrainingTopologySpec, template: Mapping[str, Any] | None
) -> tuple[PlacementRequest | None, str]:
    """(request, "") or (None, why the pod template cannot be read)."""
    try:
        return request_from_spec(spec, template), ""
    except TemplateError as err:
        return None, f"pod template: {err}"


def describe_validation_error(err: ValidationError) -> str:
    """pydantic's first error as ``spec.FIELD: must … , got VALUE`` (bounded, no type names)."""
    errors = err.errors(include_url=False)
    # "apiVersion is required" is news to someone who wrote api_version: name that key first
    first = next((e for e in errors if e["type"] == "extra_forbidden" and _meant(e)), errors[0])
    where = ".".join(_field(part) for part in first.get("loc", ()))
    where = "spec" + (f".{where}" if where else "")
    if len(where) > MAX_FIELD_ECHO:
        where = where[: MAX_FIELD_ECHO - 3] + "..."
    text = _requirement(first["type"], first.get("ctx") or {}, str(first.get("msg", "")))
    if first["type"] in ("missing", "extra_forbidden", "value_error"):
        return f"{where}: {text}{_meant(first)}"
    return f"{where}: {text}, got {shorten(first.get('input'))}{_meant(first)}"


def _meant(error: Mapping[str, Any]) -> str:
    """ " (did you mean …?)" for a mistyped field name or choice (``hidden_size``, ``pined``)."""
    loc = tuple(error.get("loc", ()))
    if error["type"] == "extra_forbidden" and loc:
        return suggestion(loc[-1], field_names_at(loc[:-1]))
    if error["type"] == "literal_error":
        expected = str((error.get("ctx") or {}).get("expected", ""))
        return suggestion(error.get("input"), re.findall(r"'([^']*)'", expected))
    return ""


def _one_of(names: tuple[str, ...]) -> str:
    """``'a', 'b' or 'c'``, as pydantic words a closed choice."""
    quoted = [f"'{name}'" for name in names]
    return ", ".join(quoted[:-1]) + f" or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def _field(part: object) -> str:
    return str(part) if isinstance(part, int) else shorten(str(part), 30).strip("'\"")


_REQUIREMENTS = {
    "missing": "is required",
    "extra_forbidden": "is not a field of a TrainingTopology spec",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "model_attributes_type": "must be a mapping",
    "list_type": "must be a list",
    "string_pattern_mismatch": "is not in the expected form",
}


def _requirement(kind: str, ctx: Mapping[str, Any], msg: str) -> str:
    if kind in _REQUIREMENTS:
        return _REQUIREMENTS[kind]
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {"greater_than_equal": "at least", "greater_than": "more than"}
        words |= {"less_than_equal": "at most", "less_than": "less than"}
        return f"must be {words[kind]} {shorten(next(iter(ctx.values()), ''))}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}"
    if kind in ("string_too_long", "too_long"):
        unit = "characters" if kind == "string_too_long" else "entries"
        return f"must have at most {ctx.get('max_length')} {unit}"
    if kind in ("string_too_short", "too_short"):
        unit = "characters" if kind == "string_too_short" else "entries"
        return f"must have at least {ctx.get('min_length')} {unit}"
    if kind == "value_error":
        return msg.removeprefix("Value error, ")
    return _without_type_names(msg)


def _without_type_names(msg: str) -> str:
    """pydantic's own sentence, minus the class names some of them carry."""
    words = msg.replace("Input should be", "must be").split(" or instance of ")[0]
    return words.replace("dictionary", "mapping")
