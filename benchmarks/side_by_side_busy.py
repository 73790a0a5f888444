"""The ``busy`` scenario of ``kueue_side_by_side.py``: busy jobs already share a spine.

Instead of tenant pods scattered over the pool (which hold GPUs but send nothing fabricfit
knows of), the pool is fragmented in two halves that look alike to a scheduler counting free
GPUs, but not to the links:

* on **spine 0**, ``rail_group_nodes / 2`` communication-bound jobs run, each of two whole
  nodes, one in each of the spine's first two rail groups (TP8 × DP2 of a 20B model with
  256-token sequences and one micro-batch, so its gradient all-reduce is nearly all of its
  step): every one of their data-parallel rings climbs the two rail groups' leaf uplinks.
  They are real TrainingTopologies placed by the operator (``pinned`` mode, in a namespace
  Kueue ignores), each held to its two nodes by a node label and the Job's nodeSelector, so
  the operator's link load holds their recorded plans;
* on **spine 1**, tenant pods hold the same number of whole nodes in the same two rail groups
  (traffic nobody knows of).

Both spines thus offer the same free nodes. Each job of the comparison is then placed by Kueue
TAS (blind to traffic) and by fabricfit (next to the busy jobs' traffic), and *both* placements
are priced next to that traffic with the same function (``placement.pricing.price_pods(...,
neighbours=...)``; the running jobs read from the cluster as ``fabricfit plan --running``
reads them, ``cli.running.running_jobs``): the step communication with neighbours (the cost
model's price alone plus the slowdown of the links it shares) and the seconds per step it adds
to the busy jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

import side_by_side_kube as actions
from fabricfit.cli.running import running_jobs
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.neighbours import Neighbours
from fabricfit_dev import kube
from fabricfit_dev.cluster.controllers import KUEUE_IGNORE_LABEL, KUEUE_IGNORE_VALUE
from fabricfit_dev.kube import TT, Clients
from fabricfit_dev.waiting import wait_for

BUSY_NS = "bench-busy"  # the busy jobs: placed by fabricfit, ignored by Kueue
BUSY_LABEL = "bench.fabricfit.dev/busy"  # holds each busy job to its two nodes
SPINE = "topology.fabricfit.dev/spine"
RAIL_GROUP = "topology.fabricfit.dev/rail-group"
BUSY_MODEL = {"parameters": 20_000_000_000, "hiddenSize": 6144, "layers": 44,
              "sequenceLength": 256, "microBatchSize": 1, "microBatches": 1}  # fmt: skip


@dataclass(frozen=True)
class BusyLayout:
    """Which nodes each busy job runs on (spine 0), and which the tenants hold (spine 1)."""

    jobs: tuple[tuple[str, tuple[str, str]], ...]
    tenants: tuple[str, ...]


def busy_layout(manifests: Sequence[Mapping[str, Any]], rail_group_nodes: int) -> BusyLayout:
    """The layout on a pool of two spines of (at least) two rail groups (pure)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for manifest in manifests:
        labels = manifest["metadata"]["labels"]
        key = (labels[SPINE], labels[RAIL_GROUP])
        groups.setdefault(key, []).append(manifest["metadata"]["name"])
    spines = sorted({spine for spine, _ in groups})
    if len(spines) < 2:
        raise actions.BenchError("the busy scenario needs two spines")
    half = max(1, rail_group_nodes // 2)
    first, second = ([groups[k] for k in sorted(groups) if k[0] == s][:2] for s in spines[:2])
    if len(first) < 2 or len(second) < 2:
        raise actions.BenchError("the busy scenario needs two rail groups per spine")
    jobs = tuple((f"busy-{i}", (first[0][i], first[1][i])) for i in range(half))
    tenants = tuple(second[0][:half] + second[1][:half])
    return BusyLayout(jobs, tenants)


def seed(c: Clients, pool: str, layout: BusyLayout, gpus_per_node: int) -> None:
    """Start the busy jobs (placed by the operator, each on its two nodes) and the tenants."""
    try:
        c.core.create_namespace({"metadata": {
            "name": BUSY_NS, "labels": {KUEUE_IGNORE_LABEL: KUEUE_IGNORE_VALUE}}})  # fmt: skip
    except ApiException as err:
        if err.status != 409:
            raise
    kube.wait_service_account(c.core, BUSY_NS)
    for name, nodes in layout.jobs:
        for node in nodes:
            c.core.patch_node(node, {"metadata": {"labels": {BUSY_LABEL: name}}})
        actions.create_topology(c, BUSY_NS, topology(name, gpus_per_node))
        job = actions.indexed_job(name, 2, gpus_per_node, pool)
        job["spec"]["template"]["spec"]["nodeSelector"][BUSY_LABEL] = name
        c.batch.create_namespaced_job(BUSY_NS, job)
    for name, _ in layout.jobs:
        wait_for(lambda n=name: kube.bound_nodes(c.core, BUSY_NS, n, 2), 120, 0.3,
                 f"busy job {name} bound")  # fmt: skip
    actions.create_tenants(c, [(f"tenant-{node}"[:63], node, gpus_per_node)
                               for node in layout.tenants])  # fmt: skip


def topology(name: str, gpus_per_node: int) -> dict[str, Any]:
    """A busy job's TrainingTopology: TP8 × DP2 of a communication-bound model."""
    return {
        "apiVersion": f"{TT[0]}/{TT[1]}",
        "kind": "TrainingTopology",
        "metadata": {"name": name},
        "spec": {
            "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": name},
            "gpusPerPod": gpus_per_node,
            "parallelism": {"tensor": gpus_per_node, "data": 2},
            "model": dict(BUSY_MODEL),
            "placement": {"mode": "pinned"},
        },
    }


def clear(c: Clients, layout: BusyLayout) -> None:
    """Stop the busy jobs (their TrainingTopologies first go with them) and the tenants."""
    for name, _ in layout.jobs:
        actions.delete_job(c, BUSY_NS, name)
        actions.delete_topology(c, BUSY_NS, name)
    actions.delete_tenants(c)


def neighbours(c: Clients, snapshot: ClusterSnapshot, profile: FabricProfile) -> Neighbours:
    """The busy jobs' traffic, read from their TrainingTopologies as ``plan --running`` does."""
    items = c.custom.list_namespaced_custom_object(*TT[:2], BUSY_NS, TT[2])["items"]
    running = running_jobs(items, snapshot, profile, planning=None)
    if running.skipped:
        raise actions.BenchError(f"busy jobs not priced: {running.skipped}")
    return running.neighbours


def _ms(side: Any) -> str:
    alone = f" ({side.alone_ms:.1f})" if side.alone_ms is not None else ""
    return f"{side.step_ms:.1f}{alone}"


def _adds(side: Any) -> str:
    return f"{side.adds_ms:.1f}" if side.adds_ms is not None else "-"


def busy_markdown(rows: Sequence[Any], verdict: Any, tie: float) -> list[str]:
    """The busy scenario's table: each placement's step communication next to the busy jobs
    (alone in brackets) and what it adds to them, per step, summed."""
    lines = [
        "| fabric | job | pods | Kueue TAS annotations (admitted) | Kueue: rail groups · spines "
        "| fabricfit: rail groups · spines | Kueue ms with neighbours (alone) | Kueue adds ms "
        "| fabricfit ms with neighbours (alone) | fabricfit adds ms | Kueue ÷ fabricfit |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if r.kueue is None or r.fabricfit is None:
            lines.append(f"| {r.fabric} | {r.label} | {r.pods} | {r.kueue_annotations} | "
                         f"not measured: {r.error} | | | | | | |")  # fmt: skip
            continue
        k, f = r.kueue, r.fabricfit
        lines.append(
            f"| {r.fabric} | {r.label} | {r.pods}×{r.gpus_per_pod} | {r.kueue_annotations} | "
            f"{_groups(k.rail_groups)} · {len(k.spines)} | {_groups(f.rail_groups)} · "
            f"{len(f.spines)} | {_ms(k)} | {_adds(k)} | {_ms(f)} | {_adds(f)} | "
            f"{verdict(r.ratio)} |"
        )
    lines += [
        "",
        "| fabric | jobs | ties | fabricfit less | fabricfit worse | Σ Kueue ÷ Σ fabricfit "
        "| Σ adds to the busy jobs, Kueue / fabricfit (ms per step) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for fabric in [*dict.fromkeys(r.fabric for r in rows), "all"]:
        mine = [r for r in rows if fabric in ("all", r.fabric) and r.ratio]
        if not mine:
            continue
        ratios = [r.ratio for r in mine]
        adds_k = sum(r.kueue.adds_ms or 0.0 for r in mine)
        adds_f = sum(r.fabricfit.adds_ms or 0.0 for r in mine)
        lines.append(
            f"| {fabric} | {len(mine)} | {sum(abs(x - 1) <= tie for x in ratios)} | "
            f"{sum(x > 1 + tie for x in ratios)} | {sum(x < 1 - tie for x in ratios)} | "
            f"{sum(r.kueue.step_ms for r in mine) / sum(r.fabricfit.step_ms for r in mine):.2f}× "
            f"| {adds_k:.1f} / {adds_f:.1f} |"
        )
    return lines


def _groups(counts: Mapping[str, int]) -> str:
    return " ".join(f"{k}:{v}" for k, v in counts.items())
