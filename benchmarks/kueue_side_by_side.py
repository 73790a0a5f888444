"""Side by side with a real Kueue: the same jobs on the same fragmented cluster, placed by Kueue
Topology-Aware Scheduling alone and by fabricfit, pods read back from the cluster, both priced
by one cost model.

Run from the repository root (``make bench-kueue``)::

    .venv/bin/python benchmarks/kueue_side_by_side.py
    .venv/bin/python benchmarks/kueue_side_by_side.py --fabrics dgx-h100 \\
        --jobs zero3,moe --rail-group-nodes 8 --json out.json

What it does, in one run on the project's local control plane (``hack/cluster up --with
kueue,jobset,lws`` in a private state directory, stopped at the end unless ``--keep``):

* per fabric (``dgx-h100`` full bisection, ``h100-leaf-spine-2to1``, ``h100-rail-only``,
  ``gb200-nvl72``) a pool of kwok nodes — 2 spines × 2 rail groups × 16 eight-GPU nodes in racks
  of 4 (on NVL72: 2 × 2 × 36 four-GPU trays, NVLink racks of 18) — labelled with fabricfit's
  native keys, the fabric named by the node label ``topology.fabricfit.dev/fabric`` (how a
  cluster admin tells fabricfit which preset prices its nodes), and seeded tenant pods holding
  ``--tenant-share`` (24 %) of the GPUs, bound by name;
* a Kueue Topology over the native labels (spine, rail group, rack, hostname), a TAS
  ResourceFlavor on the pool, a ClusterQueue and a LocalQueue;
* per job, two runs on the same cluster state, one after the other (each job deleted, and its
  pods gone, before the next run):

  (a) **Kueue TAS alone**: an Indexed Job with the queue label and the TAS annotations a careful
      user would write (``careful_user_annotations``), tightest first: required at the
      rail-group level (the spine for a job larger than a rail group) with slices keeping each
      NVLink block of pods together (pairs of 4-GPU pods per 8-GPU node at the hostname level;
      a TP·EP block per NVL72 rack) and, for a pipeline-parallel job larger than a rail group,
      an outer rail-group slice of one stage; when Kueue cannot admit that within
      ``--admit-seconds`` (it says why), the next looser set (preferred instead of required,
      then fewer slices) — the table names the set Kueue admitted; and, for reference, once
      more with only ``podset-preferred-topology`` at the rail-group level (issue #16's run);
  (b) **fabricfit** (the operator, ``fabricfit run``): through Kueue's AdmissionCheck
      (``placement.mode: admission-check`` on a ClusterQueue of its own whose check fabricfit
      controls: Kueue reserves quota, fabricfit plans and pins) when the operator in this
      checkout has that mode, else ``pinned`` beside Kueue in a namespace Kueue ignores
      (``--fabricfit-mode``); the output says which.

* For both: the node of every pod read back from the cluster (``pod.spec.nodeName`` by
  completion index), the rail groups and spines used, and the predicted step communication of
  that placement priced by the same function (``fabricfit.placement.pricing.price_pods``: the
  snapshot of the cluster without the job, the pods of a node on its lowest free GPU windows as
  the device plugin hands them out, in the worse of two admission orders — neither side's
  windows are enforced here: the pools publish GPUs as counts),
  the cost model's lower bound (from the TrainingTopology's status), and the ratio
  Kueue ÷ fabricfit (> 1: fabricfit predicts less communication).

Every number is the cost model's prediction for placements the real schedulers made; nothing
runs on GPUs. The jobs are issue #16's four (dense TP8·PP4·DP4 in whole-node pods, MoE
TP2·PP4·DP8·EP8 and a ZeRO-3 TP4·DP4 fine-tune and TP4·DP16 in 4-GPU pods) plus two larger than
one rail group (TP8·PP2·DP16 in whole-node pods, TP4·DP48 in 4-GPU pods).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kubernetes.client.exceptions import ApiException

import side_by_side_busy as busy
import side_by_side_kube as actions  # the script's own directory is sys.path[0]
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.profiles import ProfileError, get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.placement.pricing import PricedPods, price_pods
from fabricfit.placement.request import request_from_spec
from fabricfit_dev.cluster import fakenodes, kueueobjects
from fabricfit_dev.demo.workloads import plan_tenants
from fabricfit_dev.kube import Clients, bound_nodes, has_condition, read_cluster, read_topology
from fabricfit_dev.waiting import WaitTimeoutError, wait_for
from kueue_jobs import (
    JOBS,
    LEVELS,
    PREFERRED,
    RAIL_GROUP,
    BenchJob,
    FabricShape,
    careful_user_annotations,
    describe,
    fabric_shape,
    topology_spec,
)

ROOT = Path(__file__).resolve().parents[1]

FABRICS = ("dgx-h100", "h100-leaf-spine-2to1", "h100-rail-only", "gb200-nvl72")
TIE = 0.005  # within 0.5 %: a tie
REFUSAL_SETTLE_SECONDS = 3.0
WIN = 1.3


def admission_check_available() -> bool:
    """Whether this checkout's operator runs as a Kueue AdmissionCheck controller."""
    return importlib.util.find_spec("fabricfit.reconcile.admission") is not None


def fabricfit_mode(requested: str) -> str:
    if requested == "auto":
        return "admission-check" if admission_check_available() else "pinned"
    return requested


@dataclass
class Side:
    """One scheduler's placement of one job, as the cluster shows it, priced."""

    nodes: list[str]
    step_ms: float
    rail_groups: dict[str, int]
    spines: dict[str, int]
    data_groups_crossing_rail_group: int
    seconds_to_bound: float
    note: str = ""
    alone_ms: float | None = None  # busy scenario: the price alone (step_ms: with neighbours)
    adds_ms: float | None = None  # busy scenario: what it adds to the busy jobs, per step


@dataclass
class Row:
    fabric: str
    job: str
    label: str
    pods: int
    gpus_per_pod: int
    kueue_annotations: str
    kueue_attempts: list[str] = field(default_factory=list)
    kueue: Side | None = None
    kueue_plain: Side | None = None  # only podset-preferred-topology: rail group (issue #16)
    fabricfit: Side | None = None
    lower_bound_ms: float | None = None
    fabricfit_status_ms: float | None = None
    fabric_reason: str = ""
    error: str = ""

    @property
    def ratio(self) -> float | None:
        if self.kueue is None or self.fabricfit is None or self.fabricfit.step_ms <= 0:
            return None
        return self.kueue.step_ms / self.fabricfit.step_ms


def _short(value: str) -> str:
    return value.rsplit("/", 1)[-1].rsplit("|", 1)[-1].removeprefix("rg:")


def _side(priced: PricedPods, nodes: list[str], seconds: float, note: str = "") -> Side:
    times = priced.predicted
    priced_next_to_others = times.neighbour_slowdown_seconds is not None
    return Side(
        nodes=nodes,
        step_ms=priced.predicted.step_comm_seconds * 1e3,
        rail_groups={_short(k): v for k, v in sorted(priced.rail_groups.items())},
        spines={_short(k): v for k, v in sorted(priced.spines.items())},
        data_groups_crossing_rail_group=priced.quality.data_groups_crossing_rail_group,
        seconds_to_bound=seconds,
        note=note,
        alone_ms=times.alone_step_comm_seconds * 1e3 if priced_next_to_others else None,
        adds_ms=(times.slowdown_added_to_others_seconds or 0.0) * 1e3
        if priced_next_to_others
        else None,
    )


class Bench:
    """One run: the cluster, the operator, and the rows measured so far."""

    def __init__(self, clients: Clients, args: argparse.Namespace, started: float) -> None:
        self.c = clients
        self.args = args
        self.rows: list[Row] = []
        self.started = started
        self.serial = 0
        self.seeded = ""

    def fresh_name(self, job: BenchJob) -> str:
        """A Job name never used before in this run: each submission is its own Workload, and
        no controller can mistake a deleted run's objects for the next one's."""
        self.serial += 1
        return f"{job.key}-{self.serial}"

    def say(self, message: str) -> None:
        print(f"  [{time.monotonic() - self.started:5.0f} s] {message}", flush=True)

    def snapshot(self, shape: FabricShape) -> Any:
        nodes, pods = read_cluster(self.c, f"{actions.POOL_LABEL}={shape.pool}")
        mine = (actions.KUEUE_NS, actions.FABRICFIT_NS)
        others = [p for p in pods if p["metadata"]["namespace"] not in mine]
        return build_snapshot(nodes, others, scheme="native")

    def run_fabric(self, shape: FabricShape, jobs: Sequence[BenchJob]) -> None:
        fabric = shape.fake_fabric()
        manifests = fakenodes.node_manifests(fabric)
        started = time.monotonic()
        actions.create_nodes(self.c, manifests)
        names = [m["metadata"]["name"] for m in manifests]
        total = len(names) * shape.gpus_per_node
        layout = self._seed(shape, manifests, names)
        self.say(
            f"{shape.fabric}: {len(names)} nodes of {shape.gpus_per_node} GPUs "
            f"({shape.spines} spines × {shape.rail_groups_per_spine} rail groups × "
            f"{shape.nodes_per_rail_group}), {self.seeded} ({time.monotonic() - started:.0f} s)"
        )
        try:
            with (
                actions.kueue_queues(self.c, shape.pool, shape.pool, LEVELS, total) as queue,
                self._fabricfit_queue(shape, total) as ff_queue,
            ):
                for job in jobs:
                    self.rows.append(
                        self.run_job(shape, job.on(shape.gpus_per_node), queue, ff_queue)
                    )
        finally:
            if layout is not None:
                busy.clear(self.c, layout)
            actions.delete_tenants(self.c)
            actions.delete_pool(self.c, shape.pool)

    def _seed(
        self, shape: FabricShape, manifests: Sequence[Mapping[str, Any]], names: list[str]
    ) -> busy.BusyLayout | None:
        """Tenant pods over the pool, or (``--scenario busy``) the busy jobs and tenants."""
        if self.args.scenario == "busy":
            layout = busy.busy_layout(manifests, shape.nodes_per_rail_group)
            busy.seed(self.c, shape.pool, layout, shape.gpus_per_node)
            self.seeded = (
                f"{len(layout.jobs)} busy jobs of 2 nodes across the rail groups of spine 0, "
                f"{len(layout.tenants)} whole nodes of spine 1 held by tenants"
            )
            return layout
        tenants = plan_tenants(names, self.args.tenant_share, self.args.seed, shape.gpus_per_node)
        actions.create_tenants(self.c, [(f"{t.name}-{shape.pool}"[:63], t.node, t.gpus)
                                     for t in tenants])  # fmt: skip
        held = sum(t.gpus for t in tenants)
        total = len(names) * shape.gpus_per_node
        self.seeded = f"{held} of {total} GPUs held by {len(tenants)} tenant pods"
        return None

    @contextmanager
    def _fabricfit_queue(self, shape: FabricShape, gpus: int) -> Iterator[str | None]:
        """fabricfit's own ClusterQueue (AdmissionCheck mode), or None in pinned mode."""
        if self.args.mode != "admission-check":
            yield None
            return
        from fabricfit.api.constants import ADMISSION_CHECK_CONTROLLER

        name = f"{shape.pool}-fabricfit"
        with actions.admission_queue(
            self.c, name, shape.pool, gpus, ADMISSION_CHECK_CONTROLLER
        ) as q:
            yield q

    def run_job(
        self, shape: FabricShape, job: BenchJob, queue: str, ff_queue: str | None = None
    ) -> Row:
        ladder = careful_user_annotations(job, shape)
        row = Row(shape.fabric, job.key, job.label, job.pods, job.gpus_per_pod, "")
        left = actions.leftovers(self.c)
        if left:
            row.error = f"the cluster was not as the tenants left it ({left}); not measured"
            self.say(f"{job.key}: {row.error}")
            return row
        snapshot = self.snapshot(shape)
        spec = topology_spec(job, self.args.mode)
        request = request_from_spec(TrainingTopologySpec.model_validate(spec))
        profile = get_profile(shape.fabric)
        running = (
            busy.neighbours(self.c, snapshot, profile) if self.args.scenario == "busy" else None
        )

        def priced(nodes: list[str]) -> PricedPods:
            return price_pods(snapshot, request, profile, nodes, neighbours=running)

        try:
            kueue_nodes, used, seconds = self.place_with_kueue(shape, job, queue, ladder, row)
            row.kueue_annotations = describe(used)
            row.kueue = _side(priced(kueue_nodes), kueue_nodes, seconds)
            if self.args.plain:
                plain = [{PREFERRED: RAIL_GROUP}]
                nodes, _, seconds = self.place_with_kueue(shape, job, queue, plain, Row(
                    shape.fabric, job.key, job.label, job.pods, job.gpus_per_pod, ""))  # fmt: skip
                row.kueue_plain = _side(priced(nodes), nodes, seconds)
            ff_nodes, tt, seconds = self.place_with_fabricfit(shape, job, spec, ff_queue)
            status = tt.get("status") or {}
            row.fabricfit = _side(priced(ff_nodes), ff_nodes, seconds)
            if status.get("lowerBoundSeconds") is not None:
                row.lower_bound_ms = float(status["lowerBoundSeconds"]) * 1e3
            predicted = status.get("predicted") or {}
            if predicted.get("stepCommSeconds") is not None:
                row.fabricfit_status_ms = float(predicted["stepCommSeconds"]) * 1e3
            row.fabric_reason = f"{status.get('fabric', '?')}: {status.get('fabricReason', '')}"
        except (actions.BenchError, WaitTimeoutError, ValueError) as err:
            row.error = str(err)
            self.say(f"{job.key}: {err}")
        if row.kueue is not None and row.fabricfit is not None:
            self.say(
                f"{job.key}: Kueue {row.kueue.step_ms:.1f} ms [{row.kueue_annotations}] bound "
                f"in {row.kueue.seconds_to_bound:.1f} s; fabricfit {row.fabricfit.step_ms:.1f} ms "
                f"bound in {row.fabricfit.seconds_to_bound:.1f} s; ratio {row.ratio:.2f}"
            )
        return row

    def place_with_kueue(
        self, shape: FabricShape, job: BenchJob, queue: str,
        ladder: Sequence[dict[str, str]], row: Row,
    ) -> tuple[list[str], dict[str, str], float]:  # fmt: skip
        for step in ladder:
            started = time.monotonic()
            name = self.fresh_name(job)
            body = actions.indexed_job(name, job.pods, job.gpus_per_pod, shape.pool,
                                    queue=queue, annotations=step)  # fmt: skip
            try:
                created = self.c.batch.create_namespaced_job(actions.KUEUE_NS, body)
            except ApiException as err:  # Kueue's webhook refused the annotations
                reason = f"refused: {(err.body or err.reason or '')[:200]}"
                row.kueue_attempts.append(f"{describe(step)}: {reason}")
                self.say(f"{job.key}: [{describe(step)}] {reason}")
                continue
            uid = created.metadata.uid
            outcome = self._wait_kueue(uid, job, name)
            if isinstance(outcome, list):
                seconds = time.monotonic() - started
                workload = actions.workload_of(self.c, uid)
                check = self._check_assignment(workload, outcome)
                row.kueue_attempts.append(f"{describe(step)}: admitted{check}")
                actions.delete_job(self.c, actions.KUEUE_NS, name)
                return outcome, step, seconds
            row.kueue_attempts.append(f"{describe(step)}: not admitted ({outcome})")
            self.say(f"{job.key}: Kueue did not admit [{describe(step)}]: {outcome}")
            actions.delete_job(self.c, actions.KUEUE_NS, name)
        raise actions.BenchError(f"Kueue admitted none of {len(ladder)} annotation sets")

    def _wait_kueue(self, uid: str, job: BenchJob, name: str) -> list[str] | str:
        """The pods' nodes once Kueue admitted and kube-scheduler bound them, else why not."""
        message, refused_at = "no Workload yet", None

        def decided() -> dict[str, Any] | str | None:
            """The admitted Workload, or Kueue's final refusal; None while it decides."""
            nonlocal message, refused_at
            workload = actions.workload_of(self.c, uid)
            if workload is None or kueueobjects.is_admitted(workload):
                return workload
            reserved = kueueobjects.condition(workload, "QuotaReserved")
            if reserved is not None and reserved.get("status") == "False":
                message = str(reserved.get("message") or "")[:200]
                # Kueue tried and said why; the cluster does not change while it waits, so
                # a refusal that stands for a few seconds is final.
                if "couldn't assign flavors" in message:
                    refused_at = refused_at or time.monotonic()
                    if time.monotonic() - refused_at >= REFUSAL_SETTLE_SECONDS:
                        return message
            return None

        try:
            outcome = wait_for(decided, self.args.admit_seconds, 0.5, f"Kueue to decide {name}")
        except WaitTimeoutError:
            return message
        if isinstance(outcome, str):
            return outcome
        return wait_for(
            lambda: bound_nodes(self.c.core, actions.KUEUE_NS, name, job.pods),
            120,
            0.3,
            f"{job.pods} pods of {name} bound",
        )

    def _check_assignment(self, workload: Mapping[str, Any] | None, nodes: list[str]) -> str:
        """Kueue's TopologyAssignment against where the pods are bound."""
        if workload is None:
            return ""
        counts: dict[tuple[str, ...], int] = {}
        for assignment in kueueobjects.podset_assignments(workload).values():
            topo = assignment.get("topologyAssignment")
            if topo:
                counts.update(kueueobjects.assignment_counts(topo))
        bound: dict[tuple[str, ...], int] = {}
        for node in nodes:
            bound[(node,)] = bound.get((node,), 0) + 1
        return "" if counts == bound else " (pods NOT where its TopologyAssignment says)"

    def place_with_fabricfit(
        self, shape: FabricShape, job: BenchJob, spec: dict[str, Any], queue: str | None
    ) -> tuple[list[str], dict[str, Any], float]:
        """Pinned: the Job beside Kueue. AdmissionCheck: the Job in Kueue's namespace on
        fabricfit's ClusterQueue (created after its TrainingTopology, as a user would)."""
        namespace = actions.KUEUE_NS if queue else actions.FABRICFIT_NS
        name = self.fresh_name(job)
        spec = {**spec, "workloadRef": {**spec["workloadRef"], "name": name}}
        started = time.monotonic()
        body = {"apiVersion": "fabricfit.dev/v1alpha1", "kind": "TrainingTopology",
                "metadata": {"name": name}, "spec": spec}  # fmt: skip
        actions.create_topology(self.c, namespace, body)
        self.c.batch.create_namespaced_job(
            namespace,
            actions.indexed_job(name, job.pods, job.gpus_per_pod, shape.pool, queue=queue),
        )
        try:
            nodes = wait_for(
                lambda: bound_nodes(self.c.core, namespace, name, job.pods),
                self.args.admit_seconds * 3,
                0.3,
                f"fabricfit to place {job.key}",
            )
            seconds = time.monotonic() - started

            def placed() -> dict[str, Any] | None:
                tt = read_topology(self.c.custom, namespace, name)
                return tt if has_condition(tt, "Placed") else None

            tt = wait_for(placed, 60, 0.3, f"{job.key} to report Placed")
            return nodes, tt, seconds
        finally:
            # The job (and its pods) first: whatever happens to the topology, the next run
            # must find the cluster as the tenants left it.
            actions.delete_job(self.c, namespace, name)
            actions.delete_topology(self.c, namespace, name)


def _groups(counts: Mapping[str, int]) -> str:
    return " ".join(f"{k}:{v}" for k, v in counts.items())


def _plain(r: Row) -> str:
    if r.kueue_plain is None or r.fabricfit is None or r.fabricfit.step_ms <= 0:
        return "-"
    return f"{r.kueue_plain.step_ms:.1f} ({r.kueue_plain.step_ms / r.fabricfit.step_ms:.2f}×)"


def verdict(ratio: float | None) -> str:
    if ratio is None:
        return "not measured"
    if ratio < 1 - TIE:
        return f"**fabricfit worse** ({1 / ratio:.2f}×)"
    if ratio <= 1 + TIE:
        return "tie"
    return f"fabricfit {ratio:.2f}× less"


def markdown(rows: Sequence[Row]) -> list[str]:
    """The table per fabric, then the mix per fabric and over everything."""
    lines = [
        "| fabric | job | pods | Kueue TAS annotations (admitted) | Kueue: rail groups · spines "
        "| fabricfit: rail groups · spines | Kueue ms | fabricfit ms | bound ms "
        "| Kueue ÷ fabricfit | Kueue, preferred rail-group only: ms (÷ fabricfit) |",
        "|---|---|---|---|---|---|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        if r.kueue is None or r.fabricfit is None:
            lines.append(f"| {r.fabric} | {r.label} | {r.pods} | {r.kueue_annotations} | "
                         f"not measured: {r.error} | | | | | | |")  # fmt: skip
            continue
        bound = f"{r.lower_bound_ms:.1f}" if r.lower_bound_ms is not None else "-"
        lines.append(
            f"| {r.fabric} | {r.label} | {r.pods}×{r.gpus_per_pod} | {r.kueue_annotations} | "
            f"{_groups(r.kueue.rail_groups)} · {len(r.kueue.spines)} | "
            f"{_groups(r.fabricfit.rail_groups)} · {len(r.fabricfit.spines)} | "
            f"{r.kueue.step_ms:.1f} | {r.fabricfit.step_ms:.1f} | {bound} | {verdict(r.ratio)} | "
            f"{_plain(r)} |"
        )
    lines.append("")
    lines.append("| fabric | jobs | fabricfit ≥ 1.3× less | ties | fabricfit worse | "
                 "mix: Σ Kueue ÷ Σ fabricfit | geometric mean |")  # fmt: skip
    lines.append("|---|---:|---:|---:|---:|---:|---:|")
    fabrics = list(dict.fromkeys(r.fabric for r in rows))
    for fabric in [*fabrics, "all"]:
        mine = [r for r in rows if fabric in ("all", r.fabric) and r.ratio]
        if not mine:
            continue
        ratios = [r.ratio for r in mine if r.ratio is not None]
        total_k = sum(r.kueue.step_ms for r in mine if r.kueue)
        total_f = sum(r.fabricfit.step_ms for r in mine if r.fabricfit)
        lines.append(
            f"| {fabric} | {len(mine)} | {sum(x >= WIN for x in ratios)} | "
            f"{sum(abs(x - 1) <= TIE for x in ratios)} | {sum(x < 1 - TIE for x in ratios)} | "
            f"{total_k / total_f:.2f}× | {statistics.geometric_mean(ratios):.2f}× |"
        )
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--fabrics", default=",".join(FABRICS), help="comma-separated presets")
    parser.add_argument("--jobs", default=",".join(j.key for j in JOBS),
                        help=f"comma-separated, of {', '.join(j.key for j in JOBS)}")  # fmt: skip
    parser.add_argument("--rail-group-nodes", type=int, default=16,
                        help="8-GPU nodes per rail group (2 spines × 2 rail groups)")  # fmt: skip
    parser.add_argument("--tenant-share", type=float, default=0.24)
    parser.add_argument("--scenario", choices=("fragmented", "busy"), default="fragmented",
                        help="fragmented: tenant pods over the pool (--tenant-share); busy: "
                             "communication-bound jobs across the rail groups of spine 0, "
                             "tenants on spine 1, both placements priced next to the busy "
                             "jobs' traffic (side_by_side_busy.py)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--admit-seconds", type=float, default=30,
                        help="how long Kueue gets to admit one annotation set")  # fmt: skip
    parser.add_argument("--controllers", default="kueue,jobset,lws")
    parser.add_argument("--fabricfit-mode", dest="mode", default="auto",
                        choices=("auto", "pinned", "admission-check"),
                        help="how fabricfit places: auto = admission-check when this checkout's "
                             "operator has it, else pinned")  # fmt: skip
    parser.add_argument("--no-plain", dest="plain", action="store_false",
                        help="skip the Kueue run with only a preferred rail group")  # fmt: skip
    parser.add_argument("--state-dir", type=Path, help="cluster state (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="leave the cluster running")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    args.mode = fabricfit_mode(args.mode)
    known = {j.key for j in JOBS}
    for name in args.jobs.split(","):
        if name not in known:
            parser.error(f"unknown job {name!r}; expected some of {', '.join(sorted(known))}")
    for name in args.fabrics.split(","):
        try:
            get_profile(name)
        except ProfileError:
            parser.error(f"unknown fabric {name!r}")
    if not 0 <= args.tenant_share <= 0.9:
        parser.error("--tenant-share must be between 0 and 0.9")
    if args.rail_group_nodes < 1:
        parser.error("--rail-group-nodes must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    jobs = [j for j in JOBS if j.key in args.jobs.split(",")]
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="fabricfit-bench-kueue-"))
    started = time.monotonic()
    print(f"== local control plane with {args.controllers} (state {state_dir})", flush=True)
    bench: Bench | None = None
    try:
        _, clients = actions.start_cluster(state_dir, args.controllers, lambda m: print(f"  {m}"))
        actions.ensure_namespaces(clients)
        log = actions.start_operator(state_dir)
        print(f"  fabricfit operator up (log {log})", flush=True)
        bench = Bench(clients, args, started)
        for fabric in args.fabrics.split(","):
            print(f"== {fabric}", flush=True)
            bench.run_fabric(fabric_shape(fabric, args.rail_group_nodes), jobs)
    except (actions.BenchError, WaitTimeoutError) as err:
        print(f"kueue_side_by_side: {err}", file=sys.stderr)
        return 1
    finally:
        if not args.keep:
            actions.stop_cluster(state_dir)
            if args.state_dir is None:
                shutil.rmtree(state_dir, ignore_errors=True)
    rows = bench.rows if bench is not None else []
    print()
    print(f"fabricfit placed in mode {args.mode}; Kueue v0.19.2 TAS placed alone. "
          f"{len(rows)} jobs in {time.monotonic() - started:.0f} s.")  # fmt: skip
    print()
    table = busy.busy_markdown(rows, verdict, TIE) if args.scenario == "busy" else markdown(rows)
    print("\n".join(table))
    print()
    for r in rows:
        print(f"{r.fabric} {r.job}: Kueue tried " + "; ".join(r.kueue_attempts))
        if r.fabricfit_status_ms is not None and r.fabricfit is not None:
            print(f"  fabricfit's status said {r.fabricfit_status_ms:.1f} ms (priced here "
                  f"{r.fabricfit.step_ms:.1f} ms); fabric {r.fabric_reason}")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps([asdict(r) | {"ratio": r.ratio} for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
