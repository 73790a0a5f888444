"""Served models on the built-in kinds, made by the real controllers, in ``pinned`` mode:

* a StatefulSet (``deploy/samples/serving/statefulset-llama.yaml``): pod k is ordinal k, its
  replicas spread over rail groups, every pod bound where the plan says;
* a Deployment: its pods carry no index, so fabricfit labels each with the next free plan index
  as it pins it; a deleted pod's replacement takes the index (and the node) it leaves.
"""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    RAIL_GROUP,
    TT,
    make_pool,
    planned,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

SAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "samples" / "serving"
GATE = "fabricfit.dev/placement"
INDEX = "fabricfit.dev/pod-index"


@pytest.fixture(scope="module")
def apps(api_client: Any) -> Any:
    from kubernetes import client

    return client.AppsV1Api(api_client)


def live(core: Any, namespace: str, selector: str) -> list[Any]:
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    return [p for p in pods if p.metadata.deletion_timestamp is None]


def bound_by(core: Any, namespace: str, selector: str, label: str, count: int) -> dict[int, Any]:
    """The live pods by the index ``label`` gives them, once ``count`` of them are bound."""

    def check() -> dict[int, Any] | None:
        pods = live(core, namespace, selector)
        indexed = {int(p.metadata.labels[label]): p for p in pods if label in p.metadata.labels}
        ready = len(indexed) == count == len(pods) and all(p.spec.node_name for p in pods)
        return indexed if ready else None

    return wait_for(check, timeout_seconds=120, what=f"{count} pods bound ({selector})")


def test_a_statefulsets_replicas_are_pinned_by_ordinal_and_spread_over_rail_groups(
    operator: OperatorProcess, core: Any, apps: Any, custom: Any, namespace: str
) -> None:
    manifests = make_pool(core, "sts", rail_groups_per_spine=2, nodes_per_rail_group=2)
    rail_group = {m["metadata"]["name"]: m["metadata"]["labels"][RAIL_GROUP] for m in manifests}
    tt, sts = yaml.safe_load_all((SAMPLE / "statefulset-llama.yaml").read_text(encoding="utf-8"))
    pod = sts["spec"]["template"]["spec"]
    pod["nodeSelector"] = {POOL_LABEL: "sts"}
    for container in pod["containers"]:  # the typed client wants quantities as strings
        limits = container["resources"]["limits"]
        limits.update({k: str(v) for k, v in limits.items()})
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], tt)
    apps.create_namespaced_stateful_set(namespace, sts)

    plan = planned(wait_condition(custom, namespace, "llama-8b", "Placed", "True", timeout=180))
    pods = bound_by(core, namespace, "app=llama-8b", "apps.kubernetes.io/pod-index", 4)
    assert [pods[k].spec.node_name for k in range(4)] == plan
    assert sorted(Counter(rail_group[n] for n in plan).values()) == [2, 2], plan


def deployment(name: str, replicas: int, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "schedulingGates": [{"name": GATE}],
                    "nodeSelector": {POOL_LABEL: pool},
                    "containers": [{"name": "serve", "image": "example.invalid/serve:1",
                                    "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
                },
            },
        },
    }  # fmt: skip


def test_a_deployments_pods_get_plan_indices_and_a_replacement_takes_the_freed_one(
    operator: OperatorProcess, core: Any, apps: Any, custom: Any, namespace: str
) -> None:
    make_pool(core, "dep", rail_groups_per_spine=1, nodes_per_rail_group=4)
    spec = {
        "workloadRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat"},
        "gpusPerPod": 8,
        "parallelism": {"tensor": 8, "data": 2},
        "serving": {"decodeBatch": 32, "promptTokens": 1024},
    }
    body = {"apiVersion": f"{TT[0]}/{TT[1]}", "kind": "TrainingTopology",
            "metadata": {"name": "chat"}, "spec": spec}  # fmt: skip
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], body)
    apps.create_namespaced_deployment(namespace, deployment("chat", 2, "dep"))

    plan = planned(wait_condition(custom, namespace, "chat", "Placed", "True", timeout=180))
    pods = bound_by(core, namespace, "app=chat", INDEX, 2)
    assert [pods[k].spec.node_name for k in range(2)] == plan
    assert all(not p.spec.scheduling_gates for p in pods.values())

    gone = copy.deepcopy(pods[0].metadata.name)
    core.delete_namespaced_pod(gone, namespace, grace_period_seconds=0)
    again = wait_for(
        lambda: (
            (found := bound_by(core, namespace, "app=chat", INDEX, 2))
            and found[0].metadata.name != gone
            and found
        ),
        timeout_seconds=120,
        what="the replacement pod bound in the deleted pod's place",
    )
    assert again[0].spec.node_name == plan[0] and again[1].metadata.name == pods[1].metadata.name
    wait_condition(custom, namespace, "chat", "Placed", "True", timeout=60)
