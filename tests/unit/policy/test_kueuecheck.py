"""The AdmissionCheck core: reading Kueue Workloads, stages, the admitted template, verdicts and
the guarded status patches (applied with an RFC 6902 implementation, conflicts included)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fabricfit.api.conditions import Reason
from fabricfit.api.constants import ADMISSION_CHECK_CONTROLLER, SCHEDULING_GATE, TOPOLOGY_LABEL
from fabricfit.placement import request_from_spec
from fabricfit.placement.constraints import node_rejection
from fabricfit.policy.kueuecheck import (
    KueueWorkload,
    Stage,
    Verdict,
    admitted_template,
    build_active_patch,
    build_check_patch,
    build_podset_updates,
    component_of,
    decide_check,
    is_ours,
    missing_flavors,
    owner_of,
    read_kueue_workload,
    stage_of,
    templates_gated,
    waiting_message,
)
from fabricfit_dev.jsonpatch import PatchError, apply_patch

NOW = "2026-12-03T12:00:00Z"
OWNER = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "controller": True}


def workload(
    *,
    checks: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    flavors: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": conditions if conditions is not None else [_true("QuotaReserved")],
        "admissionChecks": checks
        if checks is not None
        else [
            {"name": "other", "state": "Ready", "message": "", "lastTransitionTime": NOW},
            {"name": "fabricfit", "state": "Pending", "message": "", "lastTransitionTime": NOW},
        ],
    }
    if flavors is not None or conditions is None:
        status["admission"] = {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": f"ps{i}", "flavors": f} for i, f in enumerate(flavors or [{"gpu": "a"}])
            ],
        }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-train-1",
            "namespace": "ns",
            "ownerReferences": [OWNER],
            "resourceVersion": "7",
        },
        "spec": {"podSets": [{"name": "main", "count": 4}]},
        "status": status,
    }


def _true(type_: str, reason: str = "", message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": "True", "reason": reason, "message": message}


def read(body: dict[str, Any]) -> KueueWorkload:
    return read_kueue_workload(body, {"fabricfit"})


def test_reads_our_check_owner_quota_and_flavors() -> None:
    wl = read(workload(flavors=[{"nvidia.com/gpu": "h100", "cpu": "h100"}, {"gpu": "b200"}]))
    assert (wl.namespace, wl.name, wl.owner_kind, wl.owner_name) == (
        "ns", "job-train-1", "Job", "train",
    )  # fmt: skip
    assert (wl.check, wl.check_index, wl.check_state, wl.check_since) == (
        "fabricfit", 1, "Pending", NOW,
    )  # fmt: skip
    assert wl.quota_reserved and wl.evicted is None and not wl.finished
    assert wl.flavors == ("h100", "b200")
    assert wl.podsets == ("main",)
    assert wl.cluster_queue == "cq"


def test_owner_is_the_controlling_reference_only() -> None:
    body = workload()
    body["metadata"]["ownerReferences"] = [{"kind": "Thing", "name": "x"}, OWNER]
    assert owner_of(body) == ("Job", "train")
    assert owner_of({"metadata": {}}) is None
    body["metadata"]["ownerReferences"] = [{"kind": "Thing", "name": "x"}]
    assert owner_of(body) is None


def test_a_component_workload_names_its_job_in_kueues_annotations() -> None:
    body = workload()
    body["metadata"]["ownerReferences"] = [{"kind": "LeaderWorkerSet", "name": "serve"}]
    body["metadata"]["annotations"] = {
        "kueue.x-k8s.io/job-owner-gvk": "leaderworkerset.x-k8s.io/v1, Kind=LeaderWorkerSet",
        "kueue.x-k8s.io/job-owner-name": "serve",
        "kueue.x-k8s.io/component-workload-index": "3",
    }
    assert owner_of(body) == ("LeaderWorkerSet", "serve")
    assert read(body).component == 3
    for garbage in ("-1", "x", "", "99999999999"):
        body["metadata"]["annotations"]["kueue.x-k8s.io/component-workload-index"] = garbage
        assert component_of(body) == 0
    body["metadata"]["annotations"]["kueue.x-k8s.io/job-owner-gvk"] = "no kind here"
    assert owner_of(body) is None


def test_quota_kueue_could_not_reserve_says_why() -> None:
    refused = {
        "type": "QuotaReserved",
        "status": "False",
        "reason": "Pending",
        "message": "couldn't assign flavors to pod set main: insufficient unused quota",
    }
    wl = read(workload(conditions=[refused]))
    assert not wl.quota_reserved
    assert wl.quota_refused == (
        "Pending: couldn't assign flavors to pod set main: insufficient unused quota"
    )
    assert read(workload()).quota_refused is None
    assert read(workload(conditions=[])).quota_refused is None  # not tried yet


@pytest.mark.parametrize(
    ("body", "stage"),
    [
        (workload(), Stage.PLAN),
        (workload(checks=[{"name": "other", "state": "Pending"}]), Stage.NO_CHECK),
        (workload(conditions=[]), Stage.WAITING),
        (workload(conditions=[_true("QuotaReserved"), _true("Evicted", "Preempted")]),
         Stage.WAITING),
        (workload(checks=[{"name": "fabricfit", "state": "Ready"}]), Stage.READY),
        (workload(checks=[{"name": "fabricfit", "state": "Retry"}]), Stage.DECIDED),
        (workload(checks=[{"name": "fabricfit", "state": "Rejected"}]), Stage.DECIDED),
        (workload(conditions=[_true("QuotaReserved"), _true("Finished")]), Stage.FINISHED),
    ],
)  # fmt: skip
def test_stage(body: dict[str, Any], stage: Stage) -> None:
    assert stage_of(read(body)) is stage


def test_quota_reserved_needs_an_admission() -> None:
    body = workload()
    del body["status"]["admission"]
    assert stage_of(read(body)) is Stage.WAITING


def test_waiting_messages_say_why() -> None:
    evicted = workload(conditions=[_true("Evicted", "Preempted", "Preempted by ns/big")])
    assert waiting_message(read(evicted)) == (
        "Kueue evicted Workload ns/job-train-1 (Preempted: Preempted by ns/big)"
    )
    assert "reserve quota" in waiting_message(read(workload(conditions=[])))
    no_check = read(workload(checks=[]))
    assert ADMISSION_CHECK_CONTROLLER in waiting_message(no_check)


def test_admitted_template_adds_flavor_labels_and_tolerations_once() -> None:
    template = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"nodeSelector": {"zone": "a"},
                 "tolerations": [{"key": "gpu", "operator": "Exists"}]},
    }  # fmt: skip
    flavors = [
        {"spec": {"nodeLabels": {"pool": "h100"},
                  "tolerations": [{"key": "gpu", "operator": "Exists"},
                                  {"key": "reserved", "value": "ml", "effect": "NoSchedule"}]}},
        {"spec": {"nodeLabels": {"rack": "r1"}}},
    ]  # fmt: skip
    before = copy.deepcopy(template)
    new = admitted_template(template, flavors)
    assert template == before  # never mutated
    assert new["spec"]["nodeSelector"] == {"zone": "a", "pool": "h100", "rack": "r1"}
    assert new["spec"]["tolerations"] == [
        {"key": "gpu", "operator": "Exists"},
        {"key": "reserved", "value": "ml", "effect": "NoSchedule"},
    ]
    assert new["metadata"] == {"labels": {"app": "x"}}
    assert admitted_template(None, []) == {"spec": {}}


def test_admitted_template_confines_the_request_to_the_flavor_and_its_tolerations() -> None:
    from fabricfit.api.models import TrainingTopologySpec
    from fabricfit.fabric.snapshot import build_snapshot

    flavor = {"spec": {"nodeLabels": {"pool": "a"},
                       "tolerations": [{"key": "ml", "operator": "Exists",
                                        "effect": "NoSchedule"}]}}  # fmt: skip
    spec = TrainingTopologySpec.model_validate(
        {"workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "t"},
         "parallelism": {"data": 8}, "gpusPerPod": 8}
    )  # fmt: skip
    request = request_from_spec(spec, admitted_template({"spec": {}}, [flavor]))

    def node(name: str, pool: str, taints: list[dict[str, str]]) -> Any:
        return build_snapshot([{
            "metadata": {"name": name, "labels": {"pool": pool}},
            "spec": {"taints": taints},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}, "capacity": {"nvidia.com/gpu": "8"},
                       "conditions": [{"type": "Ready", "status": "True"}]},
        }]).nodes[0]  # fmt: skip

    ml = [{"key": "ml", "value": "x", "effect": "NoSchedule"}]
    other = [{"key": "other", "value": "x", "effect": "NoSchedule"}]
    assert node_rejection(node("in", "a", ml), request, {}) is None
    assert node_rejection(node("elsewhere", "b", []), request, {}) is not None
    assert node_rejection(node("tainted", "a", other), request, {}) is not None


def test_missing_flavors() -> None:
    wl = read(workload(flavors=[{"gpu": "a"}, {"gpu": "b"}]))
    assert missing_flavors(wl.flavors, {"a"}) == ["b"]
    assert missing_flavors(wl.flavors, {"a", "b"}) == []


@pytest.mark.parametrize(
    ("reason", "gated", "expected"),
    [
        (Reason.PLANNED, True, "Ready"),
        (Reason.PLANNED, False, None),
        (Reason.INSUFFICIENT_GPUS, True, "Retry"),
        (Reason.INSUFFICIENT_GPUS, False, "Retry"),
        (Reason.INVALID_SPEC, False, "Rejected"),
        (Reason.INVALID_FABRIC, False, "Rejected"),
        (Reason.UNSUPPORTED_WORKLOAD, False, "Rejected"),
        (Reason.AWAITING_ADMISSION, True, None),
        (None, True, None),
    ],
)
def test_decide_check(reason: Reason | None, gated: bool, expected: str | None) -> None:
    verdict = decide_check(reason, "why", gated=gated)
    assert (verdict.state if verdict else None) == expected
    if verdict is not None:
        assert verdict.message.endswith("why")


def test_retry_message_carries_the_planners_words() -> None:
    why = "need 4 pods (largest job that fits now: 2 pods, 16 GPUs)"
    assert decide_check(Reason.INSUFFICIENT_GPUS, why, gated=False) == Verdict(
        "Retry", f"does not fit on the assigned flavors' nodes now: {why}"
    )


def test_templates_gated() -> None:
    gated = {"spec": {"schedulingGates": [{"name": "x"}, {"name": SCHEDULING_GATE}]}}
    assert templates_gated([gated, gated])
    assert not templates_gated([gated, {"spec": {}}])
    assert not templates_gated([])


def test_podset_updates_label_every_podset() -> None:
    body = workload()
    body["spec"]["podSets"] = [{"name": "leader"}, {"name": "workers"}]
    assert build_podset_updates(read(body), "llama") == [
        {"name": "leader", "labels": {TOPOLOGY_LABEL: "llama"}},
        {"name": "workers", "labels": {TOPOLOGY_LABEL: "llama"}},
    ]


def test_check_patch_replaces_only_our_entry_after_guards() -> None:
    body = workload()
    body["status"]["admissionChecks"][1]["retryCount"] = 2
    wl = read(body)
    updates = build_podset_updates(wl, "train")
    ops = build_check_patch(wl, "Ready", "placed", now="2026-12-03T12:00:05Z",
                            podset_updates=updates)  # fmt: skip
    assert ops == [
        {"op": "test", "path": "/status/admissionChecks/1/name", "value": "fabricfit"},
        {"op": "test", "path": "/status/admissionChecks/1/state", "value": "Pending"},
        {"op": "replace", "path": "/status/admissionChecks/1",
         "value": {"name": "fabricfit", "state": "Ready", "message": "placed",
                   "lastTransitionTime": "2026-12-03T12:00:05Z", "retryCount": 2,
                   "podSetUpdates": updates}},
    ]  # fmt: skip
    patched = apply_patch(body, ops)
    assert patched["status"]["admissionChecks"][0] == body["status"]["admissionChecks"][0]
    assert patched["status"]["admissionChecks"][1]["state"] == "Ready"


def test_check_patch_fails_when_kueue_changed_the_entry() -> None:
    body = workload()
    ops = build_check_patch(read(body), "Ready", "placed", now=NOW)
    assert ops is not None
    moved = copy.deepcopy(body)
    moved["status"]["admissionChecks"].reverse()  # entries reordered
    reset = copy.deepcopy(body)
    reset["status"]["admissionChecks"][1]["state"] = "Retry"
    for changed in (moved, reset):
        with pytest.raises(PatchError):
            apply_patch(changed, ops)


def test_check_patch_retry_with_requeue_and_no_op_when_shown() -> None:
    wl = read(workload())
    ops = build_check_patch(wl, "Retry", "full", now=NOW, requeue_after_seconds=5)
    assert ops is not None
    assert ops[-1]["value"]["requeueAfterSeconds"] == 5
    shown = read(workload(checks=[{"name": "fabricfit", "state": "Retry", "message": "full",
                                   "lastTransitionTime": NOW}]))  # fmt: skip
    assert build_check_patch(shown, "Retry", "full", now="later") is None
    # same state, new message: the transition time stays
    ops = build_check_patch(shown, "Retry", "fuller", now="later")
    assert ops is not None and ops[-1]["value"]["lastTransitionTime"] == NOW
    assert build_check_patch(read(workload(checks=[])), "Ready", "x", now=NOW) is None


def admission_check(controller: str, conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {"name": "fabricfit", "generation": 3, "resourceVersion": "11"},
        "spec": {"controllerName": controller},
        "status": {"conditions": conditions},
    }


def test_active_patch() -> None:
    other = {"type": "SingleInstanceInClusterQueue", "status": "True", "reason": "x",
             "message": "", "lastTransitionTime": NOW}  # fmt: skip
    inactive = {"type": "Active", "status": "False", "reason": "Down", "message": "",
                "lastTransitionTime": NOW}  # fmt: skip
    check = admission_check(ADMISSION_CHECK_CONTROLLER, [other, inactive])
    assert is_ours(check)
    patch = build_active_patch(check, now="2026-12-03T12:00:05Z")
    assert patch == {
        "metadata": {"resourceVersion": "11"},
        "status": {"conditions": [other, {
            "type": "Active", "status": "True", "reason": "ControllerReady",
            "message": "fabricfit plans the Workloads of ClusterQueues using this check",
            "lastTransitionTime": "2026-12-03T12:00:05Z", "observedGeneration": 3}]},
    }  # fmt: skip
    active = admission_check(ADMISSION_CHECK_CONTROLLER, patch["status"]["conditions"])
    assert build_active_patch(active, now=NOW) is None
    assert build_active_patch(admission_check("kueue.x-k8s.io/provisioning", []), now=NOW) is None
