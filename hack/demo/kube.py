"""The demo's cluster actions: namespaces, fake nodes, tenants, the operator, jobs and waits.

Every action is idempotent so that ``make demo`` can run again on the cluster it left: the demo's
namespaces are deleted and recreated, fake nodes are kept when they already match, and the
operator recorded in the cluster state is replaced by a fresh one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demo.workloads import POOL, POOL_LABEL, DemoJob, TenantPod, job_manifest, tenant_manifest
from devcluster import cluster, fakenodes
from devcluster.processes import ClusterError, Started, free_port, http_ok, wait_until

ROOT = Path(__file__).resolve().parents[2]
TT = ("fabricfit.dev", "v1alpha1", "trainingtopologies")
OPERATOR = "fabricfit-operator"
JOBS_NAMESPACE = "fabricfit-demo"
TENANTS_NAMESPACE = "other-tenants"
CREATE_THREADS = 8


class DemoError(Exception):
    """A failure reported as one line (exit 1)."""


@dataclass(frozen=True)
class Clients:
    api: Any
    core: Any
    batch: Any
    custom: Any

    @classmethod
    def connect(cls, kubeconfig: Path) -> Clients:
        from kubernetes import client, config

        api = config.new_client_from_config(str(kubeconfig))
        return cls(api, client.CoreV1Api(api), client.BatchV1Api(api), client.CustomObjectsApi(api))


def poll(check: Callable[[], Any], timeout_seconds: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise DemoError(f"timed out after {timeout_seconds:.0f} s waiting for {what}")


def apply_crds(kubectl: Sequence[str]) -> None:
    done = subprocess.run(
        [*kubectl, "apply", "-f", str(ROOT / "crds")], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise DemoError(f"kubectl apply -f crds/ failed: {done.stderr.strip()}")
    # Right after a controller installed its own CRDs (Kueue's, when the demo starts it) the
    # API server's discovery can lag: kubectl wait then fails at once; ask again for a while.
    wait = [*kubectl, "wait", "--for=condition=Established", "--timeout=60s", "-f"]
    deadline = time.monotonic() + 60
    while True:
        done = subprocess.run(
            [*wait, str(ROOT / "crds")], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise DemoError(f"the CRDs in crds/ did not become Established: {done.stderr.strip()}")
        time.sleep(1)


def reset_namespace(c: Clients, name: str) -> None:
    """Make ``name`` exist and hold no topologies, jobs or pods (those of an earlier run)."""
    if not _namespace_exists(c, name):
        labels = {"fabricfit.dev/demo": "true"}
        c.core.create_namespace({"metadata": {"name": name, "labels": labels}})
        poll(lambda: _has_service_account(c, name), 60, f"the default ServiceAccount of {name}")
        return
    # Topologies of an earlier run may carry the operator's finalizer; their jobs go too, so
    # there is nothing to release: drop it rather than depend on an operator running.
    for item in c.custom.list_namespaced_custom_object(*TT[:2], name, TT[2])["items"]:
        patch = {"metadata": {"finalizers": None}}
        c.custom.patch_namespaced_custom_object(
            *TT[:2], name, TT[2], item["metadata"]["name"], patch
        )
    c.custom.delete_collection_namespaced_custom_object(*TT[:2], name, TT[2])
    c.batch.delete_collection_namespaced_job(name, propagation_policy="Background")

    def empty() -> bool:
        c.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        jobs = c.batch.list_namespaced_job(name).items
        pods = c.core.list_namespaced_pod(name).items
        tts = c.custom.list_namespaced_custom_object(*TT[:2], name, TT[2])["items"]
        return not (jobs or pods or tts)

    poll(empty, 120, f"namespace {name} to be emptied")


def _namespace_exists(c: Clients, name: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        c.core.read_namespace(name)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def _has_service_account(c: Clients, namespace: str) -> bool:
    from kubernetes.client.exceptions import ApiException

    try:
        c.core.read_namespaced_service_account("default", namespace)
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def ensure_nodes(c: Clients, manifests: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """Make the demo pool exactly ``manifests``; returns (created or replaced, kept)."""
    existing = {
        n.metadata.name: n for n in c.core.list_node(label_selector=f"{POOL_LABEL}={POOL}").items
    }
    wanted = {m["metadata"]["name"] for m in manifests}
    fakenodes.delete_nodes(c.core, sorted(set(existing) - wanted))
    changed = [m for m in manifests if not _same_node(existing.get(m["metadata"]["name"]), m)]
    chunks = [changed[i::CREATE_THREADS] for i in range(CREATE_THREADS)]
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        list(pool.map(lambda chunk: fakenodes.create_nodes(c.core, chunk), chunks))
    fakenodes.wait_ready(c.core, sorted(wanted), timeout_seconds=180)
    return len(changed), len(manifests) - len(changed)


def _same_node(node: Any, manifest: dict[str, Any]) -> bool:
    if node is None:
        return False
    labels = node.metadata.labels or {}
    allocatable = (node.status.allocatable or {}) if node.status else {}
    want_gpus = manifest["status"]["allocatable"]["nvidia.com/gpu"]
    same_labels = all(labels.get(k) == v for k, v in manifest["metadata"]["labels"].items())
    return same_labels and allocatable.get("nvidia.com/gpu") == want_gpus


def create_tenants(c: Clients, tenants: Sequence[TenantPod]) -> None:
    for pod in tenants:
        c.core.create_namespaced_pod(TENANTS_NAMESPACE, tenant_manifest(pod))


def start_operator(state: cluster.State) -> tuple[Started, str]:
    """(Re)start ``fabricfit run`` attached to the cluster; returns it and its metrics URL."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    python = str(venv_python if venv_python.exists() else Path(sys.executable))
    metrics_port, liveness_port = free_port(), free_port()
    liveness = f"http://127.0.0.1:{liveness_port}/healthz"
    argv = [python, "-m", "fabricfit", "run", "--standalone",
            "--kubeconfig", str(state.kubeconfig), "--metrics-port", str(metrics_port),
            "--liveness", liveness, "--resync-seconds", "5"]  # fmt: skip
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "KUBECONFIG": str(state.kubeconfig)}
    started = cluster.attach(state, OPERATOR, argv, env=env, marker="fabricfit")
    try:
        wait_until("the fabricfit operator", lambda: http_ok(liveness), started, 90)
    except ClusterError as err:
        raise DemoError(str(err)) from err
    return started, f"http://127.0.0.1:{metrics_port}/metrics"


def submit(c: Clients, job: DemoJob, topology: dict[str, Any]) -> None:
    c.batch.create_namespaced_job(JOBS_NAMESPACE, job_manifest(job))
    c.custom.create_namespaced_custom_object(*TT[:2], JOBS_NAMESPACE, TT[2], topology)


def read_topology(c: Clients, name: str) -> dict[str, Any]:
    return dict(c.custom.get_namespaced_custom_object(*TT[:2], JOBS_NAMESPACE, TT[2], name))


def _condition(tt: dict[str, Any], kind: str) -> dict[str, Any] | None:
    for cond in (tt.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def bound_nodes(c: Clients, job: DemoJob) -> list[str] | None:
    """Node of each pod by completion index, once kube-scheduler has bound all of them."""
    pods = c.core.list_namespaced_pod(JOBS_NAMESPACE, label_selector=f"job-name={job.name}").items
    live = [p for p in pods if p.metadata.deletion_timestamp is None]
    index = "batch.kubernetes.io/job-completion-index"
    nodes = {int(p.metadata.labels[index]): p.spec.node_name for p in live}
    if len(nodes) != job.pods or not all(nodes.values()):
        return None
    return [nodes[i] for i in range(job.pods)]


def wait_bound(c: Clients, job: DemoJob, timeout_seconds: float = 180) -> list[str]:
    """Wait until the operator placed ``job`` and every pod is bound; fail with its reason."""
    deadline = time.monotonic() + timeout_seconds
    last = "no status yet"
    while time.monotonic() < deadline:
        tt = read_topology(c, job.name)
        planned = _condition(tt, "Planned")
        if planned is not None and planned.get("status") == "False":
            last = f"{planned.get('reason')}: {planned.get('message')}"
            if planned.get("reason") == "InvalidSpec":
                raise DemoError(f"{job.name} was rejected: {last}")
        nodes = bound_nodes(c, job)
        if nodes is not None:
            return nodes
        time.sleep(0.5)
    raise DemoError(f"{job.name} was not placed within {timeout_seconds:.0f} s ({last})")


def wait_status(c: Clients, job: DemoJob, timeout_seconds: float = 60) -> dict[str, Any]:
    """The topology once its status says Placed (it follows the binding by a moment)."""

    def placed() -> dict[str, Any] | None:
        tt = read_topology(c, job.name)
        cond = _condition(tt, "Placed")
        return tt if cond is not None and cond.get("status") == "True" else None

    found: dict[str, Any] = poll(placed, timeout_seconds, f"{job.name} to report Placed")
    return found


def read_cluster(c: Clients) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Node and Pod objects (as plain dicts) of the demo pool and every namespace."""
    nodes = c.core.list_node(label_selector=f"{POOL_LABEL}={POOL}").items
    pods = c.core.list_pod_for_all_namespaces().items
    return (
        [c.api.sanitize_for_serialization(n) for n in nodes],
        [c.api.sanitize_for_serialization(p) for p in pods],
    )
