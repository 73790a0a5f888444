"""What the optional controllers (Kueue, JobSet, LeaderWorkerSet, Kubeflow Trainer) are and how
they run locally.

Pure builders, no processes: which names ``--with`` accepts and in what order they start, each
controller's Configuration file, its command line, and the rewrite of its own webhook and CRD
manifests (rendered at build time from the module's ``config/``) from in-cluster Services to
loopback URLs served with the cluster CA.

Every controller runs with leader election off, its webhook server on 127.0.0.1 with a serving
cert from the project's PKI (internal cert management off), and health and metrics on free
loopback ports. ``install`` starts them; this module only says how.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

#: Start order: the Trainer after JobSet (it builds JobSets), Kueue last, so the JobSet and
#: LeaderWorkerSet CRDs its integrations watch exist.
ORDER: Final = ("jobset", "lws", "trainer", "kueue")
#: hack/versions.env key of each controller's pinned version.
VERSION_KEYS: Final = {
    "kueue": "KUEUE_VERSION",
    "jobset": "JOBSET_VERSION",
    "lws": "LWS_VERSION",
    "trainer": "TRAINER_VERSION",
}
#: Namespace each controller considers its own (leader election and cert secrets, both off here).
NAMESPACES: Final = {
    "kueue": "kueue-system",
    "jobset": "jobset-system",
    "lws": "lws-system",
    "trainer": "kubeflow-system",
}
#: Controllers another one cannot work without: a TrainJob runs as a JobSet.
REQUIRES: Final = {"trainer": ("jobset",)}
#: The Trainer's webhook server reads its cert from controller-runtime's default directory under
#: the process's temporary directory (its Configuration has no cert dir), so each cluster gives
#: it a TMPDIR of its own and writes the cert there.
TRAINER_CERT_SUBDIR: Final = Path("k8s-webhook-server", "serving-certs")
#: Kueue integrations enabled by default; Kueue waits for a framework's CRD to appear.
KUEUE_FRAMEWORKS: Final = (
    "batch/job",
    "pod",
    "jobset.x-k8s.io/jobset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)
#: Kueue feature gates set explicitly: TAS with multi-layer slices (both beta and on in v0.19,
#: pinned here so a version bump cannot silently turn them off); the visibility API server is
#: off because it would need its own certificates and an APIService nothing here uses.
KUEUE_FEATURE_GATES: Final = {
    "TopologyAwareScheduling": True,
    "TASMultiLayerTopology": True,
    "VisibilityOnDemand": False,
}
#: Namespaces labelled ``fabricfit.dev/kueue: ignore`` are left alone by Kueue, even for jobs
#: with a queue-name label (Kueue 0.19 always respects managedJobsNamespaceSelector), besides
#: Kueue's own default exemptions. The e2e suite labels every namespace that does not ask for
#: Kueue, so tests that play Kueue's part by hand keep working while Kueue runs.
KUEUE_IGNORE_LABEL: Final = "fabricfit.dev/kueue"
KUEUE_IGNORE_VALUE: Final = "ignore"
_KUEUE_MANAGED_NAMESPACES: Final = {
    "matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "NotIn",
         "values": ["kube-system", "kueue-system"]},
        {"key": KUEUE_IGNORE_LABEL, "operator": "NotIn", "values": [KUEUE_IGNORE_VALUE]},
    ]
}  # fmt: skip
#: Kueue v0.19 reads its metrics serving cert from this fixed path whenever internal cert
#: management is off (cmd/kueue/main.go); it cannot be configured.
KUEUE_METRICS_CERT_DIR: Final = Path("/etc/kueue/metrics/certs")
_WEBHOOK_KINDS: Final = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
_LOOPBACK: Final = "127.0.0.1"


@dataclass(frozen=True)
class ControllerPorts:
    webhook: int
    health: int
    metrics: int


@dataclass(frozen=True)
class Controller:
    """One optional controller of a running cluster, as recorded in ``state.json``."""

    name: str
    version: str
    ports: ControllerPorts


def parse_with(value: str) -> list[str]:
    """``"kueue,jobset"`` -> the named controllers in start order; ValueError names a bad one."""
    names = [part.strip() for part in value.split(",") if part.strip()]
    if not names:
        raise ValueError("--with needs at least one of: " + ", ".join(sorted(ORDER)))
    unknown = [n for n in names if n not in ORDER]
    if unknown:
        raise ValueError(
            f"unknown component '{unknown[0]}' for --with (expected any of: "
            + ", ".join(sorted(ORDER))
            + ")"
        )
    wanted = set(names) | {r for n in names for r in REQUIRES.get(n, ())}
    return [n for n in ORDER if n in wanted]


def _address(port: int) -> str:
    return f"{_LOOPBACK}:{port}"


def _common(name: str, ports: ControllerPorts, cert_dir: Path, api_version: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": ports.webhook, "host": _LOOPBACK, "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": _address(ports.health)},
        "metrics": {"bindAddress": _address(ports.metrics)},
    }


def kueue_configuration(
    ports: ControllerPorts,
    cert_dir: Path,
    frameworks: Sequence[str] = KUEUE_FRAMEWORKS,
    feature_gates: Mapping[str, bool] = KUEUE_FEATURE_GATES,
) -> dict[str, Any]:
    """Kueue's ``config.kueue.x-k8s.io/v1beta2`` Configuration."""
    doc = _common("kueue", ports, cert_dir, "config.kueue.x-k8s.io/v1beta2")
    doc["namespace"] = NAMESPACES["kueue"]
    doc["managedJobsNamespaceSelector"] = copy.deepcopy(_KUEUE_MANAGED_NAMESPACES)
    doc["integrations"] = {"frameworks": list(frameworks)}
    doc["featureGates"] = dict(feature_gates)
    return doc


def jobset_configuration(ports: ControllerPorts, cert_dir: Path) -> dict[str, Any]:
    """JobSet's ``config.jobset.x-k8s.io/v1alpha1`` Configuration."""
    doc = _common("jobset", ports, cert_dir, "config.jobset.x-k8s.io/v1alpha1")
    # Without internal cert management JobSet serves metrics from a cert dir too.
    doc["metrics"]["certDir"] = str(cert_dir)
    return doc


def lws_configuration(ports: ControllerPorts, cert_dir: Path) -> dict[str, Any]:
    """LeaderWorkerSet's ``config.lws.x-k8s.io/v1alpha1`` Configuration."""
    return _common("lws", ports, cert_dir, "config.lws.x-k8s.io/v1alpha1")


def trainer_configuration(ports: ControllerPorts, cert_dir: Path) -> dict[str, Any]:
    """Kubeflow Trainer's ``config.trainer.kubeflow.org/v1alpha1`` Configuration (its own
    schema: ``certManagement`` instead of ``internalCertManagement``, no cert dir, metrics over
    plain HTTP on loopback). ``cert_dir`` is where :func:`environment` makes it look."""
    return {
        "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": False},
        "webhook": {"port": ports.webhook, "host": _LOOPBACK},
        "health": {"healthProbeBindAddress": _address(ports.health)},
        "metrics": {"bindAddress": _address(ports.metrics), "secureServing": False},
    }


def configuration(name: str, ports: ControllerPorts, cert_dir: Path) -> dict[str, Any]:
    builders = {
        "kueue": kueue_configuration,
        "jobset": jobset_configuration,
        "lws": lws_configuration,
        "trainer": trainer_configuration,
    }
    return builders[name](ports, cert_dir)


def webhook_cert_dir(name: str, directory: Path) -> Path:
    """Where the controller's webhook serving cert goes in the cluster's state ``directory``."""
    if name == "trainer":
        return directory / "trainer-tmp" / TRAINER_CERT_SUBDIR
    return directory / "pki" / f"{name}-webhook"


def environment(name: str, directory: Path, base: Mapping[str, str]) -> dict[str, str] | None:
    """The process environment of the controller (None: inherit ``base`` unchanged)."""
    if name == "trainer":
        return {**base, "TMPDIR": str(directory / "trainer-tmp")}
    return None


def command_line(binary: Path, config_file: Path, kubeconfig: Path) -> list[str]:
    """argv of a controller (all are controller-runtime managers with a --config file)."""
    return [str(binary), f"--config={config_file}", f"--kubeconfig={kubeconfig}"]


def health_url(ports: ControllerPorts) -> str:
    return f"http://{_address(ports.health)}/readyz"


def localize(
    docs: Iterable[Mapping[str, Any]], name: str, webhook_port: int, ca_bundle_b64: str
) -> list[dict[str, Any]]:
    """The controller's CRDs and webhook configurations, served on loopback.

    Each Service-based ``clientConfig`` (admission webhooks and CRD conversion webhooks) becomes
    ``url: https://127.0.0.1:<port><path>`` with ``caBundle``; webhook configurations get the
    controller's name as prefix (the modules all call theirs ``mutating-webhook-configuration``);
    the Service itself, and anything else that only makes sense in-cluster, is dropped.
    """
    out: list[dict[str, Any]] = []
    for original in docs:
        doc = copy.deepcopy(dict(original))
        kind = doc.get("kind")
        if kind in _WEBHOOK_KINDS:
            doc["metadata"]["name"] = f"{name}-{doc['metadata']['name']}"
            for hook in doc.get("webhooks") or []:
                hook["clientConfig"] = _url_client(
                    hook.get("clientConfig"), webhook_port, ca_bundle_b64
                )
            out.append(doc)
        elif kind == "CustomResourceDefinition":
            webhook = ((doc.get("spec") or {}).get("conversion") or {}).get("webhook")
            if webhook is not None:
                webhook["clientConfig"] = _url_client(
                    webhook.get("clientConfig"), webhook_port, ca_bundle_b64
                )
            out.append(doc)
    return out


def _url_client(client: Mapping[str, Any] | None, port: int, ca_bundle_b64: str) -> dict[str, Any]:
    service = (client or {}).get("service") or {}
    path = str(service.get("path") or "")
    return {"url": f"https://{_address(port)}{path}", "caBundle": ca_bundle_b64}


def crd_names(docs: Iterable[Mapping[str, Any]]) -> list[str]:
    return [d["metadata"]["name"] for d in docs if d.get("kind") == "CustomResourceDefinition"]
