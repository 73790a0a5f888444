"""Applying a plan: the template patch each kind may take, and Placed/Degraded read back."""

from __future__ import annotations

from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.reconcile import evaluation
from fabricfit.reconcile.applying import Intent, build_patch_for
from fabricfit.reconcile.draft import StatusDraft
from fabricfit.reconcile.planning import fresh_snapshot
from unit.reconcile.world import World, gated_pod, job, target_of, topology

RAIL_KEY = "topology.fabricfit.dev/rail-group"


def spec_for(kind: str, api_version: str, **placement: Any) -> TrainingTopologySpec:
    raw = topology()["spec"]
    raw["workloadRef"] = {"apiVersion": api_version, "kind": kind, "name": "llama"}
    raw["placement"] = {"mode": "pinned", **placement}
    return TrainingTopologySpec.model_validate(raw)


PYTORCH = {
    "spec": {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m"}]}}},
            "Worker": {"replicas": 1, "template": {"spec": {"containers": [{"name": "w"}]}}},
        }
    }
}


def test_kinds_that_refuse_affinity_changes_get_no_rail_group_affinity() -> None:
    intent = Intent(("a", "b"), RAIL_KEY, {})
    job_patch = build_patch_for(
        target_of(spec_for("Job", "batch/v1"), job(), None, ()), intent, "t"
    )
    assert "affinity" not in job_patch["spec"]["template"]["spec"]
    assert job_patch["spec"]["template"]["spec"]["schedulingGates"]
    pt = target_of(spec_for("PyTorchJob", "kubeflow.org/v1"), PYTORCH, None, ())
    pt_patch = build_patch_for(pt, intent, "t")
    for replica in ("Master", "Worker"):
        spec = pt_patch["spec"]["pytorchReplicaSpecs"][replica]["template"]["spec"]
        assert "podAffinity" in spec["affinity"]


def test_a_workload_already_carrying_the_intent_needs_no_patch() -> None:
    target = target_of(spec_for("Job", "batch/v1"), job(), None, ())
    intent = Intent(("a", "b"), None, {})
    patch = build_patch_for(target, intent, "t")
    patched = job()
    patched["spec"]["template"] = {**patched["spec"]["template"], **patch["spec"]["template"]}
    patched["spec"]["template"]["spec"] = {
        **job()["spec"]["template"]["spec"],
        **patch["spec"]["template"]["spec"],
    }
    again = target_of(target.spec, patched, None, ())
    assert build_patch_for(again, intent, "t") == {}


def test_degraded_names_the_ranks_on_an_unavailable_node() -> None:
    world = World(topology())
    snapshot = fresh_snapshot(world.state, world.views(), "native")
    good, bad = snapshot.nodes[0].name, "gone-node"
    draft = StatusDraft(None, generation=1)
    target = target_of(spec_for("Job", "batch/v1"), job(), None, (gated_pod(0),))
    evaluation.evaluate(draft, target, (good, bad), snapshot)
    reasons = [t.reason for t in draft.transitions]
    assert Reason.NODE_UNAVAILABLE in reasons and Reason.WAITING_FOR_PODS in reasons
    assert draft.fields["degradedRanks"] == list(range(8, 16))
    message = next(t.message for t in draft.transitions if t.reason is Reason.NODE_UNAVAILABLE)
    assert "gone-node (deleted)" in message


def test_pods_bound_off_plan_are_reported_in_pinned_mode() -> None:
    world = World(topology())
    snapshot = fresh_snapshot(world.state, world.views(), "native")
    a, b, c = (n.name for n in snapshot.nodes[:3])
    pods = tuple({**gated_pod(i), "spec": {"nodeName": n}} for i, n in enumerate((a, c)))
    draft = StatusDraft(None, generation=1)
    evaluation.evaluate(
        draft, target_of(spec_for("Job", "batch/v1"), job(), None, pods), (a, b), snapshot
    )
    assert Reason.PODS_OFF_PLAN in [t.reason for t in draft.transitions]


def lws(labels: dict[str, str]) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "w"}]}}
    return {
        "metadata": {"labels": labels},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplate": template}},
    }


def test_a_queued_leaderworkerset_gets_template_metadata_but_no_affinity() -> None:
    spec = spec_for("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", mode="kueue-tas")
    intent = Intent(("a", "b"), RAIL_KEY, {"kueue.x-k8s.io/podset-required-topology": RAIL_KEY})
    queued = build_patch_for(
        target_of(spec, lws({"kueue.x-k8s.io/queue-name": "q"}), None, ()), intent, "t"
    )
    for template in queued["spec"]["leaderWorkerTemplate"].values():
        assert "spec" not in template  # Kueue's webhook freezes the pod spec
        assert template["metadata"]["annotations"]
    free = build_patch_for(target_of(spec, lws({}), None, ()), intent, "t")
    worker = free["spec"]["leaderWorkerTemplate"]["workerTemplate"]
    assert worker["spec"]["affinity"]["podAffinity"]
