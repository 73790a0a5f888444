"""Serving benchmark against real Kueue: LeaderWorkerSets placed by Kueue TAS alone and by
fabricfit, pods read back from the cluster, both priced by one cost model.

Run from the repository root::

    PYTHONPATH=hack .venv/bin/python benchmarks/serving_kueue.py
    PYTHONPATH=hack .venv/bin/python benchmarks/serving_kueue.py --fabrics gb200-nvl72

One run on the project's local control plane (``hack/cluster up --with kueue,lws`` in a private
state directory, stopped at the end unless ``--keep``), per fabric:

* a kwok pool — ``dgx-h100``: 2 rail groups × 16 eight-GPU nodes in racks of 4;
  ``gb200-nvl72``: 2 rail groups × 2 NVL72 racks of 18 four-GPU trays — with ``--tenant-share``
  of the GPUs held by seeded tenant pods (the demo's layout), a Kueue Topology over the native
  labels (spine, rail group, rack, hostname), a TAS ResourceFlavor, ClusterQueue, LocalQueue;
* per case (``serving_cases.CASES`` with a LeaderWorkerSet: one group per replica):
  (a) **Kueue TAS**: the LeaderWorkerSet with the queue label and, on its leader and worker
      templates, what a careful user writes — ``podset-required-topology`` at the finest level
      holding a replica (``placement.serving.careful_level``: hostname, an NVL72 rack, a rail
      group) and one ``podset-group-name``, so Kueue keeps each group's leader and workers in
      one domain; Kueue admits each group as its own Workload. Kueue v0.19.2 has no
      ``podset-topology-spreading`` (not among its feature gates,
      ``pkg/features/kube_features.go``), so the spread case runs with the same annotations;
  (b) **fabricfit** (``fabricfit run``, ``pinned``): the TrainingTopology and the gated
      LeaderWorkerSet in a namespace Kueue ignores.
  For the disaggregated case the prefill side is placed first by fabricfit (its spread plan)
  and stays, the same for both; the decode side is what is compared, its KV transfer priced
  against those prefill pods.

Each side's pods are read back (``pod.spec.nodeName`` by group and worker index) and priced by
``serving_cases.price`` on the cluster as it was before that side placed the job. Ratios are
Kueue ÷ fabricfit (> 1: fabricfit predicts less communication).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

import side_by_side_kube as kube  # the script's own directory is sys.path[0]
from fabricfit.fabric.profiles import FabricProfile, get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.pricing import locate_pods
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.serving import careful_level
from fabricfit_dev.cluster import fakenodes, kueueobjects
from fabricfit_dev.demo.workloads import plan_tenants
from fabricfit_dev.kube import Clients, read_cluster
from fabricfit_dev.waiting import WaitTimeoutError, wait_for
from kueue_jobs import HOSTNAME, LEVELS, RACK, RAIL_GROUP, REQUIRED
from serving_cases import CASES, Case, Side, partner_of, pod_gpus, prefill_case, ratio, side

LWS = ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets")
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
LEVEL_KEYS = {"hostname": HOSTNAME, "rack": RACK, "rail-group": RAIL_GROUP}
KUEUE_CASES = (1, 2, 5)  # spread replicas, multi-node replicas, decode next to a spread prefill


def fake_fabric(fabric: str) -> fakenodes.FakeFabric:
    if fabric == "gb200-nvl72":
        return fakenodes.FakeFabric(rail_groups_per_spine=2, nodes_per_rail_group=36,
                                    nodes_per_rack=18, gpus_per_node=4, nics_per_node=4,
                                    nvlink_domain_nodes=18, fabric=fabric, prefix="sgb",
                                    pool="serve-gb200")  # fmt: skip
    return fakenodes.FakeFabric(rail_groups_per_spine=2, nodes_per_rail_group=16,
                                nodes_per_rack=4, fabric=fabric, prefix="sh",
                                pool="serve-h100")  # fmt: skip


@dataclass(frozen=True)
class Groups:
    """A LeaderWorkerSet's groups: how many, pods each, GPUs per pod, the pool it runs in."""

    groups: int
    size: int
    gpus: int
    pool: str


def leader_worker_set(
    name: str,
    shape: Groups,
    *,
    queue: str | None = None,
    annotations: dict[str, str] | None = None,
    gated: bool = False,
) -> dict[str, Any]:
    size, gpus, pool = shape.size, shape.gpus, shape.pool
    spec: dict[str, Any] = {
        "nodeSelector": {fakenodes.POOL_LABEL: pool},
        "schedulingGates": [{"name": "fabricfit.dev/placement"}] if gated else [],
        "containers": [{"name": "serve", "image": "example.invalid/serve:1",
                        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
    }  # fmt: skip
    found = dict(annotations or {})
    if size == 1:  # one pod per group: one PodSet, nothing to keep together
        found.pop(GROUP_NAME, None)
    template = {"metadata": {"annotations": found}, "spec": spec}
    templates = {"size": size, "workerTemplate": template}
    if size > 1:
        templates["leaderTemplate"] = template
    labels = {kueueobjects.QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": f"{LWS[0]}/{LWS[1]}",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": shape.groups, "leaderWorkerTemplate": templates},
    }


def bound(c: Clients, namespace: str, name: str, pods: int, size: int) -> list[str] | None:
    items = c.core.list_namespaced_pod(namespace, label_selector=f"{NAME_LABEL}={name}").items
    live = [p for p in items if p.metadata.deletion_timestamp is None]
    nodes = {
        int(p.metadata.labels[GROUP_INDEX]) * size + int(p.metadata.labels[WORKER_INDEX]):
        p.spec.node_name for p in live
    }  # fmt: skip
    if len(nodes) != pods or not all(nodes.values()):
        return None
    return [nodes[k] for k in range(pods)]


def delete_lws(c: Clients, namespace: str, name: str) -> None:
    """Delete the LeaderWorkerSet and wait until it, its StatefulSets and its pods are gone (a
    StatefulSet not yet collected would make pods again, and Kueue would bind them)."""
    try:
        c.custom.delete_namespaced_custom_object(*LWS[:2], namespace, LWS[2], name,
                                                 propagation_policy="Foreground")  # fmt: skip
    except ApiException as err:
        if err.status != 404:
            raise

    def gone() -> bool:
        selector = f"{NAME_LABEL}={name}"
        try:
            c.custom.get_namespaced_custom_object(*LWS[:2], namespace, LWS[2], name)
            return False
        except ApiException as err:
            if err.status != 404:
                raise
        c.core.delete_collection_namespaced_pod(namespace, label_selector=selector,
                                                grace_period_seconds=0)  # fmt: skip
        return not c.core.list_namespaced_pod(namespace, label_selector=selector).items

    wait_for(gone, 180, what=f"LeaderWorkerSet {name}, its StatefulSets and its pods to go")


def group_size(case: Case, gpus_per_pod: int) -> int:
    """Pods of one replica: one LeaderWorkerSet group."""
    p = case.parallelism
    return max(1, p.tensor * p.pipeline * p.expert * p.context // gpus_per_pod)


@dataclass
class Row:
    fabric: str
    case: str
    level: str
    kueue: Side | None = None
    ours: Side | None = None
    error: str = ""


class Bench:
    def __init__(self, c: Clients, args: argparse.Namespace) -> None:
        self.c, self.args = c, args
        self.serial = 0
        self.started = time.monotonic()

    def say(self, message: str) -> None:
        print(f"  [{time.monotonic() - self.started:5.0f} s] {message}", flush=True)

    def snapshot(self, pool: str, without: str) -> ClusterSnapshot:
        nodes, pods = read_cluster(self.c, f"{fakenodes.POOL_LABEL}={pool}")
        others = [p for p in pods if (p["metadata"].get("labels") or {}).get(NAME_LABEL) != without]
        return build_snapshot(nodes, others, scheme="native")

    def name(self, stem: str) -> str:
        self.serial += 1
        return f"{stem}-{self.serial}"

    def run_fabric(self, fabric: str) -> list[Row]:
        shape = fake_fabric(fabric)
        manifests = fakenodes.node_manifests(shape)
        kube.create_nodes(self.c, manifests)
        names = [m["metadata"]["name"] for m in manifests]
        tenants = plan_tenants(names, self.args.tenant_share, self.args.seed, shape.gpus_per_node)
        kube.create_tenants(self.c, [(f"{t.name}-{shape.pool}"[:63], t.node, t.gpus)
                                     for t in tenants])  # fmt: skip
        total = len(names) * shape.gpus_per_node
        self.say(f"{fabric}: {len(names)} nodes, {sum(t.gpus for t in tenants)} of {total} "
                 f"GPUs held by {len(tenants)} tenant pods")  # fmt: skip
        rows = []
        try:
            with kube.kueue_queues(self.c, shape.pool, shape.pool, LEVELS, total) as queue:
                for index in KUEUE_CASES:
                    rows.append(self.run_case(CASES[index], fabric, shape.pool, queue))
        finally:
            kube.delete_tenants(self.c)
            kube.delete_pool(self.c, shape.pool)
        return rows

    def run_case(self, case: Case, fabric: str, pool: str, queue: str) -> Row:
        profile = get_profile(fabric)
        g = pod_gpus(case, profile)
        request = case.request(g)
        size = group_size(case, g)
        snapshot = self.snapshot(pool, "")
        level = careful_level(request, [n for n in snapshot.nodes if n.gpus > 0])
        row = Row(fabric, case.label, level)
        prefill_name = ""
        try:
            if case.prefill is not None:
                prefill_name, prefill_nodes = self.fabricfit_prefill(case, g, pool)
                located = locate_pods(self.snapshot(pool, prefill_name), prefill_nodes, g)
                request = replace(request, partner=partner_of(case, g, located))
            name = self.name("kueue")
            annotations = {REQUIRED: LEVEL_KEYS[level], GROUP_NAME: "replica"}
            before = self.snapshot(pool, name)
            shape = Groups(request.pods // size, size, g, pool)
            body = leader_worker_set(name, shape, queue=queue, annotations=annotations)
            nodes = self.place(kube.KUEUE_NS, body, request.pods, size)
            row.kueue = side(before, request, profile, locate_pods(before, nodes, g))
            delete_lws(self.c, kube.KUEUE_NS, name)
            row.ours = self.fabricfit_side(case, request, profile, pool, prefill_name)
        except (kube.BenchError, WaitTimeoutError) as err:
            row.error = str(err)
            self.say(f"{case.label}: {err}")
        finally:
            if prefill_name:
                self.remove(kube.FABRICFIT_NS, prefill_name)
        return row

    def place(self, namespace: str, body: dict[str, Any], pods: int, size: int) -> list[str]:
        name = body["metadata"]["name"]
        self.c.custom.create_namespaced_custom_object(*LWS[:2], namespace, LWS[2], body)
        nodes: list[str] = wait_for(
            lambda: bound(self.c, namespace, name, pods, size),
            self.args.admit_seconds,
            what=f"{name}'s {pods} pods bound",
        )
        self.say(f"{name}: {pods} pods bound in {namespace}")
        return nodes

    def topology(self, name: str, case: Case, g: int, **serving: Any) -> dict[str, Any]:
        spec = case.serving.model_dump(by_alias=True, exclude_none=True) | serving
        return {
            "apiVersion": "fabricfit.dev/v1alpha1", "kind": "TrainingTopology",
            "metadata": {"name": name},
            "spec": {
                "workloadRef": {"apiVersion": f"{LWS[0]}/{LWS[1]}", "kind": "LeaderWorkerSet",
                                "name": name},
                "gpusPerPod": g, "rankOrder": "tp-cp-ep-pp-dp",
                "parallelism": case.parallelism.model_dump(),
                "model": case.model.model_dump(by_alias=True, exclude_none=True),
                "serving": spec,
            },
        }  # fmt: skip

    def fabricfit_prefill(self, case: Case, g: int, pool: str) -> tuple[str, list[str]]:
        first = prefill_case(case)
        name = "prefill"
        body = self.topology(name, first, g, pairedWith="decode")
        kube.create_topology(self.c, kube.FABRICFIT_NS, body)
        pods, size = first.request(g).pods, group_size(first, g)
        lws = leader_worker_set(name, Groups(pods // size, size, g, pool), gated=True)
        return name, self.place(kube.FABRICFIT_NS, lws, pods, size)

    def fabricfit_side(
        self, case: Case, request: PlacementRequest, profile: FabricProfile, pool: str, partner: str
    ) -> Side:
        g = request.gpus_per_pod
        name = "decode" if partner else self.name("fabricfit")
        before = self.snapshot(pool, name)
        extra = {"pairedWith": partner} if partner else {}
        kube.create_topology(self.c, kube.FABRICFIT_NS, self.topology(name, case, g, **extra))
        size = group_size(case, g)
        lws = leader_worker_set(name, Groups(request.pods // size, size, g, pool), gated=True)
        nodes = self.place(kube.FABRICFIT_NS, lws, request.pods, size)
        priced = side(before, request, profile, locate_pods(before, nodes, g))
        self.remove(kube.FABRICFIT_NS, name)
        return priced

    def remove(self, namespace: str, name: str) -> None:
        kube.delete_topology(self.c, namespace, name)
        delete_lws(self.c, namespace, name)


def markdown(rows: Sequence[Row]) -> list[str]:
    lines = [
        "| fabric | case | Kueue annotation | Kueue decode ms | fabricfit decode ms | decode "
        "ratio | prefill ratio | KV ratio | objective ratio | most replicas per rack "
        "(Kueue · fabricfit) |",
        "|---|---|---|---:|---:|---|---|---|---|---|",
    ]
    for r in rows:
        head = f"| {r.fabric} | {r.case} | required {r.level} | "
        if r.kueue is None or r.ours is None:
            lines.append(head + f"not measured: {r.error} | | | | | | |")
            continue
        k, o = r.kueue, r.ours
        cells = [
            f"{k.decode_s * 1e3:.3g}" if k.decode_s is not None else "—",
            f"{o.decode_s * 1e3:.3g}" if o.decode_s is not None else "—",
            *(_x(ratio(getattr(k, a), getattr(o, a))) for a in ("decode_s", "prefill_s", "kv_s",
                                                                "objective_s")),
            f"{k.most_per_rack} · {o.most_per_rack}",
        ]  # fmt: skip
        lines.append(head + " | ".join(cells) + " |")
    return lines


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fabrics", default="dgx-h100,gb200-nvl72")
    parser.add_argument("--tenant-share", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--admit-seconds", type=float, default=120.0)
    parser.add_argument("--state-dir", type=Path)
    parser.add_argument("--keep", action="store_true", help="leave the control plane running")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="fabricfit-bench-serving-"))
    rows: list[Row] = []
    try:
        _, clients = kube.start_cluster(state_dir, "kueue,lws", lambda m: print(f"  {m}"))
        kube.ensure_namespaces(clients)
        kube.start_operator(state_dir)
        bench = Bench(clients, args)
        for fabric in args.fabrics.split(","):
            print(f"== {fabric}", flush=True)
            rows += bench.run_fabric(fabric)
    except kube.BenchError as err:
        print(f"serving_kueue: {err}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            kube.stop_cluster(state_dir)
            if args.state_dir is None:
                shutil.rmtree(state_dir, ignore_errors=True)
    print()
    print("\n".join(markdown(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
