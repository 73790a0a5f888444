"""The optional controllers' configuration, command line and loopback manifests."""

from __future__ import annotations

import datetime as dt
import os
import ssl
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from hypothesis import given
from hypothesis import strategies as st

from fabricfit_dev.cluster import binaries, controllers, pki
from fabricfit_dev.cluster.controllers import Controller, ControllerPorts
from fabricfit_dev.cluster.controlplane import Ports, State

PORTS = ControllerPorts(webhook=19443, health=18081, metrics=18443)
CERTS = Path("/state/pki/kueue-webhook")


def test_with_lists_any_subset_in_start_order() -> None:
    assert controllers.parse_with("kueue,jobset") == ["jobset", "kueue"]
    assert controllers.parse_with(" lws , kueue ,jobset") == ["jobset", "lws", "kueue"]
    assert controllers.parse_with("kueue,kueue") == ["kueue"]


@given(st.sets(st.sampled_from(controllers.ORDER), min_size=1))
def test_kueue_always_starts_after_the_crds_it_integrates(names: set[str]) -> None:
    ordered = controllers.parse_with(",".join(sorted(names)))
    assert set(ordered) == names | ({"jobset"} if "trainer" in names else set())
    if "kueue" in ordered:
        assert ordered[-1] == "kueue"
    if "trainer" in ordered:  # a TrainJob runs as a JobSet: its CRD must be there first
        assert ordered.index("jobset") < ordered.index("trainer")


@pytest.mark.parametrize("value", ["", ",", "kueue,volcano", "Kueue"])
def test_with_rejects_unknown_or_empty_names(value: str) -> None:
    with pytest.raises(ValueError, match="--with"):
        controllers.parse_with(value)


@pytest.mark.parametrize(
    ("name", "api_version"),
    [
        ("kueue", "config.kueue.x-k8s.io/v1beta2"),
        ("jobset", "config.jobset.x-k8s.io/v1alpha1"),
        ("lws", "config.lws.x-k8s.io/v1alpha1"),
    ],
)
def test_every_configuration_runs_locally_without_leader_election(
    name: str, api_version: str
) -> None:
    cert_dir = Path(f"/state/pki/{name}-webhook")
    doc = controllers.configuration(name, PORTS, cert_dir)
    assert doc["apiVersion"] == api_version
    assert doc["kind"] == "Configuration"
    assert doc["leaderElection"] == {"leaderElect": False}
    assert doc["internalCertManagement"] == {"enable": False}
    assert doc["webhook"] == {"port": 19443, "host": "127.0.0.1", "certDir": str(cert_dir)}
    assert doc["health"] == {"healthProbeBindAddress": "127.0.0.1:18081"}
    assert doc["metrics"]["bindAddress"] == "127.0.0.1:18443"


def test_kueue_configuration_enables_integrations_and_tas() -> None:
    doc = controllers.kueue_configuration(PORTS, CERTS)
    assert doc["namespace"] == "kueue-system"
    frameworks = doc["integrations"]["frameworks"]
    for framework in (
        "batch/job",
        "jobset.x-k8s.io/jobset",
        "leaderworkerset.x-k8s.io/leaderworkerset",
    ):
        assert framework in frameworks
    assert doc["featureGates"]["TopologyAwareScheduling"] is True
    assert doc["featureGates"]["TASMultiLayerTopology"] is True
    assert doc["featureGates"]["VisibilityOnDemand"] is False
    exempt = doc["managedJobsNamespaceSelector"]["matchExpressions"]
    assert {"key": "fabricfit.dev/kueue", "operator": "NotIn", "values": ["ignore"]} in exempt
    custom = controllers.kueue_configuration(PORTS, CERTS, frameworks=["batch/job"])
    assert custom["integrations"]["frameworks"] == ["batch/job"]


def test_trainer_runs_locally_in_its_own_configuration_schema(tmp_path: Path) -> None:
    doc = controllers.configuration("trainer", PORTS, tmp_path)
    assert doc["apiVersion"] == "config.trainer.kubeflow.org/v1alpha1"
    assert doc["leaderElection"] == {"leaderElect": False}
    assert doc["certManagement"] == {"enable": False}
    assert "internalCertManagement" not in doc  # not a field of the Trainer's schema
    assert doc["webhook"] == {"port": 19443, "host": "127.0.0.1"}
    assert doc["health"] == {"healthProbeBindAddress": "127.0.0.1:18081"}
    assert doc["metrics"] == {"bindAddress": "127.0.0.1:18443", "secureServing": False}
    # Its webhook server reads controller-runtime's default cert dir under TMPDIR.
    env = controllers.environment("trainer", tmp_path, {"PATH": "/bin"})
    assert env == {"PATH": "/bin", "TMPDIR": str(tmp_path / "trainer-tmp")}
    cert_dir = controllers.webhook_cert_dir("trainer", tmp_path)
    assert cert_dir == Path(env["TMPDIR"], "k8s-webhook-server", "serving-certs")
    assert controllers.environment("kueue", tmp_path, {}) is None
    assert controllers.webhook_cert_dir("kueue", tmp_path) == tmp_path / "pki" / "kueue-webhook"


def test_jobset_serves_metrics_from_the_webhook_cert_dir() -> None:
    assert controllers.jobset_configuration(PORTS, CERTS)["metrics"]["certDir"] == str(CERTS)


def test_command_line_names_config_and_kubeconfig() -> None:
    argv = controllers.command_line(Path("/c/bin/kueue"), Path("/s/k.yaml"), Path("/s/admin.kc"))
    assert argv == ["/c/bin/kueue", "--config=/s/k.yaml", "--kubeconfig=/s/admin.kc"]
    assert controllers.health_url(PORTS) == "http://127.0.0.1:18081/readyz"


def _service(path: str | None) -> dict[str, Any]:
    service: dict[str, Any] = {"name": "webhook-service", "namespace": "system"}
    if path is not None:
        service["path"] = path
    return {"service": service}


def _manifests() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "webhook-service"}},
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [
                {"name": "mjob.kb.io", "clientConfig": _service("/mutate-batch-v1-job")},
                {"name": "mpod.kb.io", "clientConfig": _service(None)},
            ],
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "workloads.kueue.x-k8s.io"},
            "spec": {
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {"clientConfig": _service("/convert")},
                }
            },
        },
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "topologies.kueue.x-k8s.io"},
            "spec": {"group": "kueue.x-k8s.io"},
        },
    ]


def test_localize_points_every_webhook_at_loopback_with_the_ca() -> None:
    original = _manifests()
    docs = controllers.localize(original, "kueue", 19443, "Q0E=")
    assert [d["kind"] for d in docs] == [
        "MutatingWebhookConfiguration",
        "CustomResourceDefinition",
        "CustomResourceDefinition",
    ]
    hooks = docs[0]["webhooks"]
    assert docs[0]["metadata"]["name"] == "kueue-mutating-webhook-configuration"
    assert hooks[0]["clientConfig"] == {
        "url": "https://127.0.0.1:19443/mutate-batch-v1-job",
        "caBundle": "Q0E=",
    }
    assert hooks[1]["clientConfig"]["url"] == "https://127.0.0.1:19443"
    conversion = docs[1]["spec"]["conversion"]["webhook"]["clientConfig"]
    assert conversion == {"url": "https://127.0.0.1:19443/convert", "caBundle": "Q0E="}
    assert docs[2] == original[3]
    assert original[1]["webhooks"][0]["clientConfig"] == _service("/mutate-batch-v1-job")
    assert controllers.crd_names(docs) == [
        "workloads.kueue.x-k8s.io",
        "topologies.kueue.x-k8s.io",
    ]


@pytest.mark.parametrize("name", controllers.ORDER)
def test_built_manifests_have_no_service_left(name: str) -> None:
    home = binaries.locate_controller(name)
    if home.missing():
        if os.environ.get("CI"):
            pytest.fail(f"CI must build {name} before running tests (make cluster-build)")
        pytest.skip(f"{name} not built (hack/cluster build --with {name})")
    docs = [
        d
        for path in (home.crds, home.webhooks)
        for d in yaml.safe_load_all(path.read_text())
        if isinstance(d, dict)
    ]
    local = controllers.localize(docs, name, 1, "Q0E=")
    assert controllers.crd_names(local)
    hooks = [h for d in local if d["kind"].endswith("WebhookConfiguration") for h in d["webhooks"]]
    conversions = [
        d["spec"]["conversion"]["webhook"]
        for d in local
        if d["kind"] == "CustomResourceDefinition" and "webhook" in d["spec"].get("conversion", {})
    ]
    assert hooks
    for client in [h["clientConfig"] for h in [*hooks, *conversions]]:
        assert set(client) == {"url", "caBundle"}
        assert client["url"].startswith("https://127.0.0.1:1")


def test_serving_cert_is_signed_by_the_cluster_ca_for_loopback(tmp_path: Path) -> None:
    keys = pki.generate(tmp_path / "pki")
    cert, key = pki.issue_serving_cert(tmp_path / "pki", tmp_path / "hook", "kueue-webhook")
    assert (cert.name, key.name) == ("tls.crt", "tls.key")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(cert, key)  # the pair matches
    loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    ca = x509.load_pem_x509_certificate(keys.ca_cert.read_bytes())
    loaded.verify_directly_issued_by(ca)
    sans = loaded.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "127.0.0.1" in [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)]
    assert pki.still_valid(cert, key)
    assert not pki.still_valid(cert, key, margin=dt.timedelta(days=365))
    assert not pki.still_valid(tmp_path / "none.crt", key)


def test_self_signed_cert_replaces_a_broken_one(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_text("not a cert")
    cert, key = pki.self_signed_serving_cert(tmp_path, "kueue-metrics")
    assert pki.still_valid(cert, key)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tls.crt", "tls.key"]


def test_state_round_trips_its_controllers(tmp_path: Path) -> None:
    state = State(str(tmp_path), Ports(apiserver=6443))
    state.controllers.append(Controller("kueue", "v0.19.2", PORTS))
    state.save()
    loaded = State.load(tmp_path)
    assert loaded is not None
    assert loaded.controllers == [Controller("kueue", "v0.19.2", PORTS)]


def test_docs_versions_table_matches_the_pins() -> None:
    page = Path(__file__).resolve().parents[3] / "docs" / "contributing" / "development.md"
    readme = page.read_text()
    pins = binaries.pinned_versions()
    rows = {
        "Kueue (`--with kueue`)": pins["KUEUE_VERSION"],
        "JobSet (`--with jobset`)": pins["JOBSET_VERSION"],
        "LeaderWorkerSet (`--with lws`)": pins["LWS_VERSION"],
        "Kubeflow Trainer (`--with trainer`)": pins["TRAINER_VERSION"],
        "etcd": pins["ETCD_VERSION"],
        "kwok": pins["KWOK_VERSION"],
        "helm": pins["HELM_VERSION"],
        "Prometheus server (e2e scrape)": pins["PROMETHEUS_VERSION"],
    }
    for component, version in rows.items():
        assert f"| {component} | {version} |" in readme
