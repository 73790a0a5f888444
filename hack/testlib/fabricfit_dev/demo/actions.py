"""The demo's cluster actions: namespaces, fake nodes, tenants, the operator, jobs and waits.

Every action is idempotent so that ``make demo`` can run again on the cluster it left: the demo's
namespaces are deleted and recreated, fake nodes are kept when they already match, and the
operator recorded in the cluster state is replaced by a fresh one. The client, the waits and the
operator's start are the test library's (``kube``, ``waiting``, ``operator``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fabricfit_dev import kube, paths
from fabricfit_dev.cluster import controlplane, fakenodes
from fabricfit_dev.cluster.jobs import TT
from fabricfit_dev.cluster.processes import Started, free_port
from fabricfit_dev.demo.workloads import (
    POOLS_SELECTOR,
    DemoJob,
    TenantPod,
    job_manifest,
    tenant_manifest,
)
from fabricfit_dev.kube import Clients
from fabricfit_dev.operator import attach_operator
from fabricfit_dev.waiting import WaitTimeoutError, wait_for

JOBS_NAMESPACE = "fabricfit-demo"
TENANTS_NAMESPACE = "other-tenants"
CREATE_THREADS = 8


class DemoError(Exception):
    """A failure reported as one line (exit 1)."""


def apply_crds(kubectl: Sequence[str]) -> None:
    done = subprocess.run(
        [*kubectl, "apply", "-f", str(paths.CRDS)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise DemoError(f"kubectl apply -f crds/ failed: {done.stderr.strip()}")
    # Right after a controller installed its own CRDs (Kueue's, when the demo starts it) the
    # API server's discovery can lag: kubectl wait then fails at once; ask again for a while.
    wait = [*kubectl, "wait", "--for=condition=Established", "--timeout=60s", "-f", str(paths.CRDS)]
    last = ""

    def established() -> bool:
        nonlocal last
        done = subprocess.run(wait, capture_output=True, text=True, check=False)
        last = done.stderr.strip()
        return done.returncode == 0

    try:
        wait_for(established, 60, 1.0, "the CRDs in crds/ to become Established")
    except WaitTimeoutError as err:
        raise DemoError(f"the CRDs in crds/ did not become Established: {last}") from err


def reset_namespace(c: Clients, name: str) -> None:
    """Make ``name`` exist and hold no topologies, jobs or pods (those of an earlier run)."""
    if not kube.exists(lambda: c.core.read_namespace(name)):
        labels = {"fabricfit.dev/demo": "true"}
        c.core.create_namespace({"metadata": {"name": name, "labels": labels}})
        kube.wait_service_account(c.core, name)
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

    wait_for(empty, 120, 0.3, f"namespace {name} to be emptied")


def ensure_nodes(c: Clients, manifests: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """Make the demo pools exactly ``manifests``; returns (created or replaced, kept)."""
    existing = {n.metadata.name: n for n in c.core.list_node(label_selector=POOLS_SELECTOR).items}
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


def start_operator(state: controlplane.State) -> tuple[Started, str]:
    """(Re)start ``fabricfit run`` attached to the cluster; returns it and its metrics URL."""
    metrics_port = free_port()
    started = attach_operator(state, resync_seconds=5, metrics_port=metrics_port)
    return started, f"http://127.0.0.1:{metrics_port}/metrics"


def submit(c: Clients, job: DemoJob, topology: dict[str, Any]) -> None:
    c.batch.create_namespaced_job(JOBS_NAMESPACE, job_manifest(job))
    c.custom.create_namespaced_custom_object(*TT[:2], JOBS_NAMESPACE, TT[2], topology)


def read_topology(c: Clients, name: str) -> dict[str, Any]:
    return kube.read_topology(c.custom, JOBS_NAMESPACE, name)


def bound_nodes(c: Clients, job: DemoJob) -> list[str] | None:
    """Node of each pod by completion index, once kube-scheduler has bound all of them."""
    return kube.bound_nodes(c.core, JOBS_NAMESPACE, job.name, job.pods)


def wait_bound(c: Clients, job: DemoJob, timeout_seconds: float = 180) -> list[str]:
    """Wait until the operator placed ``job`` and every pod is bound; fail with its reason."""
    last = "no status yet"

    def bound() -> list[str] | None:
        nonlocal last
        planned = kube.condition(read_topology(c, job.name), "Planned")
        if planned is not None and planned.get("status") == "False":
            last = f"{planned.get('reason')}: {planned.get('message')}"
            if planned.get("reason") == "InvalidSpec":
                raise DemoError(f"{job.name} was rejected: {last}")
        return bound_nodes(c, job)

    try:
        return wait_for(bound, timeout_seconds, 0.5, f"{job.name} to be placed")
    except WaitTimeoutError as err:
        raise DemoError(
            f"{job.name} was not placed within {timeout_seconds:.0f} s ({last})"
        ) from err


def wait_status(c: Clients, job: DemoJob, timeout_seconds: float = 60) -> dict[str, Any]:
    """The topology once its status says Placed (it follows the binding by a moment)."""

    def placed() -> dict[str, Any] | None:
        tt = read_topology(c, job.name)
        return tt if kube.has_condition(tt, "Placed") else None

    return wait_for(placed, timeout_seconds, 0.3, f"{job.name} to report Placed")


def read_cluster(c: Clients) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Node and Pod objects (as plain dicts) of the demo pools and every namespace."""
    return kube.read_cluster(c, POOLS_SELECTOR)
