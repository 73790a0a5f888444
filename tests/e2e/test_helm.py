"""The Helm chart on a real control plane: install creates every object, and the chart's RBAC is
enough for the operator to place a job — and not more (reading Secrets is forbidden).

The operator runs as a local process (``fabricfit run``, the chart's own flags) with a token of the
chart's ServiceAccount; the chart's Deployment pod cannot run the operator here (kwok fakes pods).
The session operator (admin credentials) is stopped meanwhile so that only the ServiceAccount acts.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit_dev.chart import CHART, helm
from fabricfit_dev.cluster.processes import free_port
from fabricfit_dev.e2e.accounts import sa_kubeconfig
from fabricfit_dev.e2e.objects import (
    TT,
    condition,
    indexed_job,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.kube import Clients
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

MONITORING_CRDS = {
    ("servicemonitors", "ServiceMonitor"),
    ("prometheusrules", "PrometheusRule"),
}
# Values the test sets on top of the defaults: every optional object on.
INSTALL_VALUES = (
    "metrics.serviceMonitor.enabled=true",
    "prometheusRule.enabled=true",
    "operator.resyncSeconds=2",
)
SKIPPED_FLAGS = ("--liveness", "--metrics-port", "--resync-seconds", "--standalone")


def monitoring_crd(plural: str, kind: str) -> dict[str, Any]:
    """A schema-less stand-in for a prometheus-operator CRD, so the API server accepts the kind
    (its content is checked by promtool and the chart tests)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.monitoring.coreos.com"},
        "spec": {
            "group": "monitoring.coreos.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }


@pytest.fixture(scope="module")
def release(
    kubeconfig: Path, kubectl: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """The chart installed with helm into a fresh namespace; uninstalled afterwards."""
    crds = tmp_path_factory.mktemp("crds") / "monitoring.yaml"
    crds.write_text(yaml.safe_dump_all([monitoring_crd(*c) for c in sorted(MONITORING_CRDS)]))
    subprocess.run([*kubectl, "apply", "-f", str(crds)], check=True, capture_output=True)
    for plural, _ in MONITORING_CRDS:
        subprocess.run(
            [*kubectl, "wait", "--for=condition=Established", "--timeout=60s",
             f"crd/{plural}.monitoring.coreos.com"],
            check=True, capture_output=True,
        )  # fmt: skip
    name = f"ff-{uuid.uuid4().hex[:6]}"
    namespace = f"fabricfit-{name}"
    base = [helm(), "--kubeconfig", str(kubeconfig), "--namespace", namespace]
    sets = [arg for value in INSTALL_VALUES for arg in ("--set", value)]
    installed = subprocess.run(
        # --take-ownership: the session's CRD was applied from crds/, outside any release.
        [*base, "install", name, str(CHART), "--create-namespace", "--take-ownership", *sets],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    manifest = subprocess.run(
        [*base, "get", "manifest", name], capture_output=True, text=True, check=True
    ).stdout
    try:
        yield {
            "name": name,
            "namespace": namespace,
            "notes": installed.stdout,
            "objects": [d for d in yaml.safe_load_all(manifest) if d],
        }
    finally:
        # No hooks: kwok cannot run the cleanup Job's container (test_upgrade runs its command).
        subprocess.run([*base, "uninstall", name, "--wait", "--no-hooks"],
                       capture_output=True, check=False)  # fmt: skip
        subprocess.run([*kubectl, "delete", "namespace", namespace, "--wait=false"],
                       capture_output=True, check=False)  # fmt: skip


def test_install_creates_every_object(release: dict[str, Any], kubectl: list[str]) -> None:
    objects = release["objects"]
    kinds = {o["kind"] for o in objects}
    assert kinds == {
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Service",
        "ConfigMap",
        "ServiceMonitor",
        "PrometheusRule",
    }
    for obj in objects:
        meta = obj["metadata"]
        ns = ["-n", meta["namespace"]] if meta.get("namespace") else []
        resource = f"{obj['kind'].lower()}.{obj['apiVersion'].split('/')[0]}"
        if "/" not in obj["apiVersion"]:
            resource = obj["kind"].lower()
        got = subprocess.run(
            [*kubectl, "get", resource, meta["name"], *ns, "-o", "json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert got.returncode == 0, f"{obj['kind']} {meta['name']}: {got.stderr}"
        live = json.loads(got.stdout)
        assert live["metadata"]["labels"]["app.kubernetes.io/instance"] == release["name"]
    crd = subprocess.run(
        [*kubectl, "get", "crd", "trainingtopologies.fabricfit.dev"],
        capture_output=True,
        check=False,
    )
    assert crd.returncode == 0
    assert "kubectl get tt -A" in release["notes"]


def chart_flags(release: dict[str, Any]) -> list[str]:
    deployment = next(o for o in release["objects"] if o["kind"] == "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return [a for a in container["args"] if not a.startswith(SKIPPED_FLAGS)]


@pytest.fixture
def sa_operator(
    release: dict[str, Any],
    operator: OperatorProcess,
    kubeconfig: Path,
    core: Any,
    tmp_path: Path,
) -> Iterator[tuple[OperatorProcess, Path]]:
    account = next(o for o in release["objects"] if o["kind"] == "ServiceAccount")
    credentials = sa_kubeconfig(
        kubeconfig, core, release["namespace"], account["metadata"]["name"], tmp_path / "sa.yaml"
    )
    flags = chart_flags(release)
    assert "--all-namespaces" in flags and any(f.startswith("--fabric=") for f in flags)
    operator.stop()  # only the ServiceAccount's operator may act during this test
    proc = OperatorProcess(credentials, tmp_path, "--metrics-port", str(free_port()), *flags)
    try:
        proc.start()
        yield proc, credentials
    finally:
        proc.stop()
        operator.start()


def test_chart_rbac_is_enough_to_place_and_no_more(
    sa_operator: tuple[OperatorProcess, Path],
    core: Any,
    custom: Any,
    batch: Any,
    kubectl: list[str],
    namespace: str,
) -> None:
    from kubernetes.client.exceptions import ApiException

    proc, credentials = sa_operator
    make_pool(core, "helmrbac", rail_groups_per_spine=1, nodes_per_rail_group=2)
    batch.create_namespaced_job(namespace, indexed_job("rbac", 2, "helmrbac"))
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], topology("rbac", "rbac", {"tensor": 8, "data": 2})
    )
    tt = wait_condition(custom, namespace, "rbac", "Placed", "True", timeout=120)
    pods = wait_bound(core, namespace, "rbac", 2)
    assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(planned(tt)))
    assert condition(read_topology(custom, namespace, "rbac"), "Planned")["status"] == "True"  # type: ignore[index]

    def bound_event() -> bool:
        selector = "involvedObject.kind=TrainingTopology,involvedObject.name=rbac"
        events = core.list_namespaced_event(namespace, field_selector=selector).items
        return any(e.reason == "AllPodsBound" for e in events)

    # The event is posted after the status patch that set Placed, so it may trail it a little.
    wait_for(bound_event, timeout_seconds=30, what="the AllPodsBound event")

    as_operator = Clients.connect(credentials).core
    with pytest.raises(ApiException) as denied:
        as_operator.list_namespaced_secret(namespace)
    assert denied.value.status == 403
    with pytest.raises(ApiException) as denied_node:
        as_operator.patch_node(pods[0].spec.node_name, {"metadata": {"labels": {"x": "y"}}})
    assert denied_node.value.status == 403

    def can(verb: str, resource: str) -> str:
        return subprocess.run(
            [*kubectl[:1], f"--kubeconfig={credentials}", "auth", "can-i", verb, resource, "-A"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip

    assert can("list", "secrets") == "no"
    assert can("delete", "pods") == "no"
    assert can("create", "pods") == "no"
    assert can("patch", "pods") == "yes"
    assert can("patch", "trainingtopologies.fabricfit.dev/status") == "yes"
    # No RBAC denial at all (403s for Events in namespaces other tests are deleting are not
    # RBAC's: "unable to create new content in namespace ... because it is being terminated").
    denials = re.findall(r'forbidden: User "[^"]+" cannot [^"]+', proc.logs())
    assert denials == [], denials[:5]
    assert proc.alive()


def test_forbidden_is_denied_even_before_the_operator_runs(
    release: dict[str, Any], kubeconfig: Path, core: Any, tmp_path: Path
) -> None:
    """The denial is RBAC's, not the operator's: a plain token of the chart's account."""
    from kubernetes.client.exceptions import ApiException

    account = next(o for o in release["objects"] if o["kind"] == "ServiceAccount")
    credentials = sa_kubeconfig(
        kubeconfig, core, release["namespace"], account["metadata"]["name"], tmp_path / "sa.yaml"
    )
    as_operator = Clients.connect(credentials).core
    with pytest.raises(ApiException) as denied:
        as_operator.read_namespaced_secret("anything", release["namespace"])
    assert denied.value.status == 403
    nodes = wait_for(lambda: as_operator.list_node().items is not None, what="list nodes")
    assert nodes
