"""Cluster actions of ``kueue_side_by_side.py``: the control plane with Kueue, fake nodes, tenant
pods, Kueue queues, jobs placed by Kueue or by fabricfit, and what the cluster shows afterwards.

Everything goes through the API server of the project's local control plane (``hack/cluster up
--with ...`` in a private state directory), with the test library's client, wait loop and
operator start (``fabricfit_dev``); nothing here decides or prices a placement.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

from fabricfit_dev import kube, paths
from fabricfit_dev.cluster import controlplane, fakenodes, jobs, kueueobjects
from fabricfit_dev.cluster.controllers import KUEUE_IGNORE_LABEL, KUEUE_IGNORE_VALUE
from fabricfit_dev.kube import TT, Clients
from fabricfit_dev.operator import ATTACHED_NAME, attach_operator
from fabricfit_dev.waiting import wait_for

POOL_LABEL = fakenodes.POOL_LABEL
GPU = "nvidia.com/gpu"
KUEUE_NS = "bench-kueue"  # Kueue manages jobs here
FABRICFIT_NS = "bench-fabricfit"  # Kueue leaves this alone: fabricfit pins the jobs
TENANTS_NS = "bench-tenants"  # other tenants' pods, bound by name
CREATE_THREADS = 8


class BenchError(Exception):
    """A failure reported in one line."""


def start_cluster(
    state_dir: Path, controllers: str, say: Callable[[str], None]
) -> tuple[Path, Clients]:
    """``hack/cluster up --with <controllers>`` in ``state_dir``; the CRDs applied."""
    env = {**os.environ, "FABRICFIT_STATE_DIR": str(state_dir)}
    env.pop("KUBECONFIG", None)
    argv = [str(paths.CLUSTER_SCRIPT), "up", "--with", controllers]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise BenchError(f"hack/cluster up --with {controllers} failed: {tail}")
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("KUBECONFIG=")]
    if not lines:
        raise BenchError("hack/cluster up printed no KUBECONFIG= line")
    kubeconfig = Path(lines[-1].split("=", 1)[1])
    say(f"control plane up ({controllers}): KUBECONFIG={kubeconfig}")
    from fabricfit_dev.cluster import binaries

    kubectl = str(binaries.locate().kubectl)
    subprocess.run([kubectl, f"--kubeconfig={kubeconfig}", "apply", "-f", str(paths.CRDS)],
                   check=True, capture_output=True)  # fmt: skip
    return kubeconfig, Clients.connect(kubeconfig)


def stop_cluster(state_dir: Path) -> None:
    env = {**os.environ, "FABRICFIT_STATE_DIR": str(state_dir)}
    subprocess.run([str(paths.CLUSTER_SCRIPT), "down"], env=env, capture_output=True,
                   check=False)  # fmt: skip


def start_operator(state_dir: Path, extra: Sequence[str] = ()) -> Path:
    """``fabricfit run --standalone`` attached to the cluster (``down`` stops it); its log."""
    previous = os.environ.get("FABRICFIT_STATE_DIR")
    os.environ["FABRICFIT_STATE_DIR"] = str(state_dir)
    try:
        state = controlplane.require_state()
        attach_operator(state, resync_seconds=2, extra=extra)
        return Path(state.directory) / "logs" / f"{ATTACHED_NAME}.log"
    finally:
        if previous is None:
            os.environ.pop("FABRICFIT_STATE_DIR", None)
        else:
            os.environ["FABRICFIT_STATE_DIR"] = previous


def ensure_namespaces(c: Clients) -> None:
    for name, kueue in ((KUEUE_NS, True), (FABRICFIT_NS, False), (TENANTS_NS, False)):
        labels = {} if kueue else {KUEUE_IGNORE_LABEL: KUEUE_IGNORE_VALUE}
        try:
            c.core.create_namespace({"metadata": {"name": name, "labels": labels}})
        except ApiException as err:
            if err.status != 409:
                raise
    for name in (KUEUE_NS, FABRICFIT_NS, TENANTS_NS):
        kube.wait_service_account(c.core, name)


def create_nodes(c: Clients, manifests: Sequence[dict[str, Any]]) -> None:
    chunks = [list(manifests[i::CREATE_THREADS]) for i in range(CREATE_THREADS)]
    with ThreadPoolExecutor(CREATE_THREADS) as pool:
        list(pool.map(lambda chunk: fakenodes.create_nodes(c.core, chunk), chunks))
    names = [m["metadata"]["name"] for m in manifests]
    fakenodes.wait_ready(c.core, names, timeout_seconds=240)


def delete_pool(c: Clients, pool: str) -> None:
    names = [n.metadata.name for n in c.core.list_node(label_selector=f"{POOL_LABEL}={pool}").items]
    fakenodes.delete_nodes(c.core, names)


def create_tenants(c: Clients, tenants: Sequence[tuple[str, str, int]]) -> None:
    """Other tenants' pods ``(name, node, gpus)``, bound by name; waits until they all run."""
    for name, node, gpus in tenants:
        c.core.create_namespaced_pod(TENANTS_NS, {
            "metadata": {"name": name, "labels": {"app": "tenant"}},
            "spec": {"nodeName": node, "containers": [{
                "name": "work", "image": "example.invalid/tenant:1",
                "resources": {"limits": {GPU: str(gpus)}}}]},
        })  # fmt: skip
    wanted = {name for name, _, _ in tenants}

    def running() -> bool:
        pods = c.core.list_namespaced_pod(TENANTS_NS).items
        return wanted <= {p.metadata.name for p in pods if p.status.phase == "Running"}

    wait_for(running, 120, 0.3, f"{len(wanted)} tenant pods to run")


def delete_tenants(c: Clients) -> None:
    c.core.delete_collection_namespaced_pod(TENANTS_NS, grace_period_seconds=0)
    wait_for(
        lambda: not c.core.list_namespaced_pod(TENANTS_NS).items, 120, 0.3, "tenant pods to go"
    )


@contextmanager
def kueue_queues(
    c: Clients, name: str, pool: str, levels: Sequence[str], gpus: int
) -> Iterator[str]:
    """Topology, TAS ResourceFlavor on the pool, ClusterQueue and LocalQueue, all ``name``."""
    group, version = kueueobjects.GROUP, kueueobjects.VERSION
    objects = [
        ("topologies", kueueobjects.topology(name, levels)),
        ("resourceflavors", kueueobjects.resource_flavor(name, {POOL_LABEL: pool}, name)),
        ("clusterqueues", kueueobjects.cluster_queue(name, name, gpus)),
    ]
    created: list[str] = []
    try:
        for plural, body in objects:
            c.custom.create_cluster_custom_object(group, version, plural, body)
            created.append(plural)
        c.custom.create_namespaced_custom_object(
            group, version, KUEUE_NS, "localqueues", kueueobjects.local_queue(name, name)
        )
        yield name
    finally:
        with suppress(ApiException):  # it may not have been created
            c.custom.delete_namespaced_custom_object(group, version, KUEUE_NS, "localqueues", name)
        for plural in reversed(created):
            c.custom.delete_cluster_custom_object(group, version, plural, name)


@contextmanager
def admission_queue(c: Clients, name: str, pool: str, gpus: int, controller: str) -> Iterator[str]:
    """fabricfit as the AdmissionCheck of a ClusterQueue on the pool (a plain ResourceFlavor:
    fabricfit places, Kueue keeps quota and order), and its LocalQueue, all ``name``."""
    group, version = kueueobjects.GROUP, kueueobjects.VERSION
    check = {"apiVersion": f"{group}/{version}", "kind": "AdmissionCheck",
             "metadata": {"name": name}, "spec": {"controllerName": controller}}  # fmt: skip
    objects = [
        ("resourceflavors", kueueobjects.resource_flavor(name, {POOL_LABEL: pool})),
        ("admissionchecks", check),
        ("clusterqueues", kueueobjects.cluster_queue(name, name, gpus, [name])),
    ]
    created: list[str] = []
    try:
        for plural, body in objects:
            c.custom.create_cluster_custom_object(group, version, plural, body)
            created.append(plural)
        c.custom.create_namespaced_custom_object(
            group, version, KUEUE_NS, "localqueues", kueueobjects.local_queue(name, name)
        )
        yield name
    finally:
        with suppress(ApiException):  # it may not have been created
            c.custom.delete_namespaced_custom_object(group, version, KUEUE_NS, "localqueues", name)
        for plural in reversed(created):
            c.custom.delete_cluster_custom_object(group, version, plural, name)


def indexed_job(
    name: str, pods: int, gpus: int, pool: str, *,
    queue: str | None = None, annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """``fabricfit_dev.cluster.jobs``'s suspended Indexed Job on the pool, with Kueue's queue
    label and the pod template's TAS annotations when given."""
    job = jobs.indexed_job(name, pods, pool, gpus)
    if queue:
        job["metadata"]["labels"] = {kueueobjects.QUEUE_LABEL: queue}
    if annotations:
        job["spec"]["template"]["metadata"] = {"annotations": dict(annotations)}
    return job


def workload_of(c: Clients, job_uid: str) -> dict[str, Any] | None:
    listing = c.custom.list_namespaced_custom_object(
        kueueobjects.GROUP, kueueobjects.VERSION, KUEUE_NS, "workloads"
    )
    found: dict[str, Any] | None = kueueobjects.owned_workload(listing.get("items", []), job_uid)
    return found


def delete_job(c: Clients, namespace: str, job: str) -> None:
    """Delete the job, its pods (at once: kwok runs them) and, for Kueue, its Workload."""
    kube.delete_if_present(
        lambda: c.batch.delete_namespaced_job(job, namespace, propagation_policy="Background")
    )

    def gone() -> bool:
        selector = f"job-name={job}"
        c.core.delete_collection_namespaced_pod(
            namespace, label_selector=selector, grace_period_seconds=0
        )
        same = [j for j in c.batch.list_namespaced_job(namespace).items if j.metadata.name == job]
        return not same and not c.core.list_namespaced_pod(namespace, label_selector=selector).items

    wait_for(gone, 120, 0.3, f"job {job} and its pods to go")


def create_topology(c: Clients, namespace: str, body: dict[str, Any]) -> None:
    c.custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], body)


def delete_topology(c: Clients, namespace: str, name: str) -> None:
    kube.delete_if_present(
        lambda: c.custom.delete_namespaced_custom_object(*TT[:2], namespace, TT[2], name)
    )
    wait_for(
        lambda: not kube.exists(lambda: kube.read_topology(c.custom, namespace, name)),
        180,
        0.3,
        f"TrainingTopology {name} to go (its reservation released)",
    )


def leftovers(c: Clients) -> str:
    """What an earlier job left behind (pods of the benchmark's jobs, TrainingTopologies)."""
    found = []
    for namespace in (KUEUE_NS, FABRICFIT_NS):
        pods = c.core.list_namespaced_pod(namespace).items
        if pods:
            found.append(f"{len(pods)} pods in {namespace}")
    for namespace in (KUEUE_NS, FABRICFIT_NS):
        tts = c.custom.list_namespaced_custom_object(*TT[:2], namespace, TT[2])["items"]
        if tts:
            names = ", ".join(t["metadata"]["name"] for t in tts)
            found.append(f"TrainingTopologies {names} in {namespace}")
    return "; ".join(found)
