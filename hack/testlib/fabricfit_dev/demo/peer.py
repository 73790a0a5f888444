"""The demo's comparison against a real Kueue, when the local control plane runs one.

Theory of operation
-------------------
The demo compares every job with what Kueue Topology-Aware Scheduling does with it on the same
free GPUs. With ``FABRICFIT_DEMO_PEER=kueue`` (or ``auto`` on a control plane already running
Kueue) that is the real Kueue, not the package's emulation: a Kueue Topology over the demo
nodes' fabric tiers (the label scheme's keys, highest first, hostname last), a ResourceFlavor
naming it and selecting the demo pool, a ClusterQueue holding every GPU of the pool and a
LocalQueue in a namespace of its own; one such chain per node pool (the DGX nodes', the NVL72
racks'). Before fabricfit places a job, the same Indexed Job is submitted to its pool's queue
with ``podset-preferred-topology`` at the job's level (the rail group; the NVLink domain for
the NVL72 job, whose tensor groups need one), the user the emulation stands for; once Kueue
admits it and kube-scheduler binds every pod, the nodes are read back by completion index, and
the Job is deleted and its pods awaited gone, so fabricfit then sees exactly the free GPUs Kueue
saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from fabricfit.render.kueue import tier_label_keys
from fabricfit_dev import kube
from fabricfit_dev.cluster import controlplane, kueueobjects
from fabricfit_dev.cluster.kueueobjects import GROUP, HOSTNAME, QUEUE_LABEL, VERSION
from fabricfit_dev.demo.workloads import POOL, POOL_LABEL, POOLS, DemoJob, job_manifest
from fabricfit_dev.kube import Clients
from fabricfit_dev.waiting import wait_for

NAMESPACE = "fabricfit-demo-kueue"
NAME = "fabricfit-demo"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
#: Fabric tiers, highest first, as Kueue Topology levels (hostname is always the last level).
TIERS = ("spine", "rail_group", "rack", "nvlink_domain")
#: The cluster-scoped Kueue objects of the demo's chain, in the order they are deleted.
CHAIN = ("clusterqueues", "resourceflavors", "topologies")


def runs_kueue(state: controlplane.State) -> bool:
    """Whether the local control plane runs the Kueue controller."""
    return any(c.name == "kueue" for c in state.controllers)


def topology_levels(scheme: str, nodes: Sequence[dict[str, Any]]) -> list[str]:
    """The node label keys of the scheme's tiers every demo node carries, highest first, then
    the hostname (Kueue leaves a node without a level's label out of the Topology)."""
    keys = tier_label_keys(scheme, [n["metadata"]["labels"] for n in nodes])
    levels = []
    for tier in TIERS:
        key = keys.get(tier)
        if key and key not in levels and all(key in n["metadata"]["labels"] for n in nodes):
            levels.append(key)
    return [*levels, HOSTNAME]


def preferred_level(
    scheme: str, levels: Sequence[str], nodes: Sequence[dict[str, Any]], tier: str = "rail_group"
) -> str:
    """The level the comparison's user prefers: the job's tier (the rail group, the emulation's
    level, unless the job says otherwise), or the highest level when the scheme labels none."""
    key = tier_label_keys(scheme, [n["metadata"]["labels"] for n in nodes]).get(tier)
    return key if key is not None and key in levels else levels[0]


def chain_name(pool: str) -> str:
    """The name of the Kueue objects (and LocalQueue) of a node pool."""
    return NAME if pool == POOL else f"fabricfit-{pool}"


def reset(c: Clients) -> None:
    """Delete the Kueue chains of every demo pool (an earlier run's)."""
    for pool in POOLS:
        _delete_chain(c, chain_name(pool))


def prepare(c: Clients, pool: str, levels: Sequence[str], gpus: int) -> str:
    """Create the Kueue chain for ``pool`` (after :func:`reset`); returns the LocalQueue's
    name."""
    name = chain_name(pool)
    objects = [
        ("topologies", kueueobjects.topology(name, levels)),
        ("resourceflavors", kueueobjects.resource_flavor(name, {POOL_LABEL: pool}, name)),
        ("clusterqueues", kueueobjects.cluster_queue(name, name, gpus)),
    ]
    for plural, body in objects:
        c.custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
    c.custom.create_namespaced_custom_object(
        GROUP, VERSION, NAMESPACE, "localqueues", kueueobjects.local_queue(name, name)
    )
    return name


def _delete_chain(c: Clients, name: str) -> None:
    kube.delete_if_present(
        lambda: c.custom.delete_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, "localqueues", name
        )
    )
    for plural in CHAIN:
        kube.delete_if_present(
            partial(c.custom.delete_cluster_custom_object, GROUP, VERSION, plural, name)
        )
    wait_for(lambda: not _chain_left(c, name), 60, 0.3, "the demo's earlier Kueue objects to go")


def _chain_left(c: Clients, name: str) -> bool:
    return any(
        kube.exists(partial(c.custom.get_cluster_custom_object, GROUP, VERSION, plural, name))
        for plural in CHAIN
    )


def place(
    c: Clients, job: DemoJob, queue: str, level_key: str, timeout_seconds: float = 120
) -> list[str]:
    """Kueue TAS's placement of ``job``: the node of each pod, by completion index (see the
    module doc). The Job is gone again when this returns."""
    body = job_manifest(job)
    body["metadata"]["labels"][QUEUE_LABEL] = queue
    body["spec"]["template"]["metadata"] = {"annotations": {PREFERRED: level_key}}
    selector = f"job-name={job.name}"
    c.batch.create_namespaced_job(NAMESPACE, body)
    try:
        return wait_for(
            lambda: kube.bound_nodes(c.core, NAMESPACE, job.name, job.pods),
            timeout_seconds,
            0.3,
            f"Kueue to place {job.name}",
        )
    finally:
        c.batch.delete_namespaced_job(job.name, NAMESPACE, propagation_policy="Background")
        c.core.delete_collection_namespaced_pod(
            NAMESPACE, label_selector=selector, grace_period_seconds=0
        )
        wait_for(
            lambda: not c.core.list_namespaced_pod(NAMESPACE, label_selector=selector).items,
            60,
            0.3,
            f"Kueue's pods of {job.name} to go",
        )
