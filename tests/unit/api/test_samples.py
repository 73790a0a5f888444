"""The samples in deploy/samples/ are what a user would apply: every TrainingTopology validates
against the generated schema, passes every CEL rule, parses with the models, and names a
workload in the same file that matches it (pods, GPUs, index labels, gates); the built-in
objects validate against the Kubernetes schemas of the pinned version."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from fabricfit.api.constants import ADMISSION_CHECK_CONTROLLER, SCHEDULING_GATE
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.policy import workload_problems
from fabricfit.workloads import kind_named
from unit.api.apiserver import (
    apply_defaults,
    failed_rules,
    load_samples,
    sample_topologies,
    schema_errors,
)

KUBERNETES_VERSION = "1.36.0"
TOPOLOGIES = sample_topologies()
# Custom resources of other projects (Kueue, LeaderWorkerSet) are not in the built-in schemas.
FOREIGN_GROUPS = ("kueue.x-k8s.io/", "leaderworkerset.x-k8s.io/")
BUILTINS = [
    (name, doc)
    for name, doc in load_samples()
    if doc["kind"] != "TrainingTopology" and not doc["apiVersion"].startswith(FOREIGN_GROUPS)
]


def _ids(items: list[tuple[str, dict[str, Any]]]) -> list[str]:
    return [f"{name}:{doc['kind']}/{doc['metadata']['name']}" for name, doc in items]


def _workload(file_name: str, kind: str) -> list[dict[str, Any]]:
    return [doc for name, doc in load_samples() if name == file_name and doc["kind"] == kind]


def _gpus(pod_spec: dict[str, Any]) -> int:
    return sum(int(c["resources"]["limits"]["nvidia.com/gpu"]) for c in pod_spec["containers"])


def test_samples_cover_dense_moe_and_plain_pods() -> None:
    specs = [TrainingTopologySpec.model_validate(doc["spec"]) for _, doc in TOPOLOGIES]
    dense = [s for s in specs if s.workload_ref and s.workload_ref.name == "llama-70b"]
    assert [(s.parallelism.tensor, s.parallelism.pipeline, s.parallelism.data) for s in dense] == [
        (8, 4, 4)
    ]
    assert any(s.model and s.model.experts > 0 and s.parallelism.expert > 1 for s in specs)
    assert any(s.workload_ref and s.workload_ref.kind == "Pod" for s in specs)


@pytest.mark.parametrize(("file_name", "doc"), TOPOLOGIES, ids=_ids(TOPOLOGIES))
def test_topology_validates_against_schema_and_rules(
    file_name: str, doc: dict[str, Any], schema: dict[str, Any]
) -> None:
    assert schema_errors(schema, doc) == []
    defaulted = apply_defaults(schema, doc)
    assert schema_errors(schema, defaulted) == []
    assert failed_rules(schema, defaulted) == []
    assert failed_rules(schema, defaulted, old=defaulted) == []  # an unchanged re-apply


@pytest.mark.parametrize(("file_name", "doc"), TOPOLOGIES, ids=_ids(TOPOLOGIES))
def test_topology_parses_and_defaults_agree(
    file_name: str, doc: dict[str, Any], spec_schema: dict[str, Any]
) -> None:
    spec = TrainingTopologySpec.model_validate(doc["spec"])
    server_defaulted = TrainingTopologySpec.model_validate(apply_defaults(spec_schema, doc["spec"]))
    assert server_defaulted == spec
    assert spec.world_size % spec.gpus_per_pod == 0


@pytest.mark.parametrize(("file_name", "doc"), TOPOLOGIES, ids=_ids(TOPOLOGIES))
def test_topology_workload_is_in_the_same_file_and_fits(
    file_name: str, doc: dict[str, Any]
) -> None:
    spec = TrainingTopologySpec.model_validate(doc["spec"])
    ref = spec.workload_ref
    assert ref is not None
    if ref.kind == "Job":
        (job,) = [j for j in _workload(file_name, "Job") if j["metadata"]["name"] == ref.name]
        assert job["spec"]["completionMode"] == "Indexed"
        assert job["spec"]["suspend"] is True
        assert job["spec"]["completions"] == job["spec"]["parallelism"] == spec.pods
        assert _gpus(job["spec"]["template"]["spec"]) == spec.gpus_per_pod
        return
    if ref.kind != "Pod":
        _check_served_workload(file_name, spec)
        return
    assert ref.kind == "Pod" and ref.pod_selector and ref.index_label
    pods = [
        p
        for p in _workload(file_name, "Pod")
        if ref.pod_selector.items() <= p["metadata"]["labels"].items()
    ]
    indexes = sorted(int(p["metadata"]["labels"][ref.index_label]) for p in pods)
    assert indexes == list(range(spec.pods))
    for pod in pods:
        assert {"name": SCHEDULING_GATE} in pod["spec"]["schedulingGates"]
        assert _gpus(pod["spec"]) == spec.gpus_per_pod


def _check_served_workload(file_name: str, spec: TrainingTopologySpec) -> None:
    """A served model's LeaderWorkerSet, StatefulSet or Deployment: as many pods as the spec
    needs, one replica per LeaderWorkerSet group, gated (no suspend flag), the GPUs per pod."""
    ref = spec.workload_ref
    assert ref is not None and spec.serving is not None
    (workload,) = [w for w in _workload(file_name, ref.kind) if w["metadata"]["name"] == ref.name]
    assert not workload_problems(spec, workload)
    kind = kind_named(ref.kind)
    assert kind is not None and kind.expected_pods(workload) == spec.pods
    (_, template) = kind.pod_templates(workload)[-1]
    assert {"name": SCHEDULING_GATE} in template["spec"]["schedulingGates"]
    assert _gpus(template["spec"]) == spec.gpus_per_pod


def test_the_serving_samples_pair_prefill_with_decode_and_spread_replicas() -> None:
    specs = {
        doc["metadata"]["name"]: TrainingTopologySpec.model_validate(doc["spec"])
        for name, doc in TOPOLOGIES
        if name.startswith("serving/")
    }
    prefill, decode = specs["llama-prefill"].serving, specs["llama-decode"].serving
    assert prefill is not None and decode is not None
    assert (prefill.role, prefill.paired_with) == ("prefill", "llama-decode")
    assert (decode.role, decode.paired_with) == ("decode", "llama-prefill")
    kinds = {s.workload_ref.kind for s in specs.values() if s.workload_ref is not None}
    assert kinds == {"LeaderWorkerSet", "StatefulSet"}
    assert {s.serving.spread for s in specs.values() if s.serving} >= {"Rack", "RailGroup"}


@pytest.mark.parametrize(("file_name", "doc"), BUILTINS, ids=_ids(BUILTINS))
def test_builtin_objects_validate_strictly(file_name: str, doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


def test_headless_services_name_their_jobs_pods() -> None:
    services = [(name, doc) for name, doc in load_samples() if doc["kind"] == "Service"]
    for file_name, service in services:
        job_name = service["spec"]["selector"]["batch.kubernetes.io/job-name"]
        (job,) = [j for j in _workload(file_name, "Job") if j["metadata"]["name"] == job_name]
        assert service["spec"]["clusterIP"] == "None"
        assert job["spec"]["template"]["spec"]["subdomain"] == service["metadata"]["name"]


def test_the_kueue_sample_chains_job_queue_and_fabricfits_check() -> None:
    name = "kueue/admission-check.yaml"
    docs = {(d["kind"], d["metadata"]["name"]): d for n, d in load_samples() if n == name}
    (tt,) = [d for (kind, _), d in docs.items() if kind == "TrainingTopology"]
    spec = TrainingTopologySpec.model_validate(tt["spec"])
    assert spec.placement.mode == "admission-check" and spec.workload_ref is not None
    job = docs[("Job", spec.workload_ref.name)]
    local = docs[("LocalQueue", job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"])]
    cluster = docs[("ClusterQueue", local["spec"]["clusterQueue"])]
    (check,) = cluster["spec"]["admissionChecksStrategy"]["admissionChecks"]
    assert docs[("AdmissionCheck", check["name"])]["spec"]["controllerName"] == (
        ADMISSION_CHECK_CONTROLLER
    )
    (group,) = cluster["spec"]["resourceGroups"]
    for flavor in group["flavors"]:
        assert docs[("ResourceFlavor", flavor["name"])]["spec"]["nodeLabels"]
        (quota,) = flavor["resources"]
        assert quota["nominalQuota"] >= spec.pods * spec.gpus_per_pod  # one job fits the quota
