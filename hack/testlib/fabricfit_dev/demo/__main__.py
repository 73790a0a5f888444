"""``make demo``: a simulated GPU cluster on the local control plane, with fabricfit at work.

Builds (or reuses) the control-plane binaries, starts (or reuses) the local control plane,
creates fake DGX nodes with topology labels (and, in a pool of their own, GB200 NVL72 racks) and
other tenants' pods, applies the CRDs, starts the operator, submits training jobs with their
TrainingTopologies, waits until kube-scheduler has bound every pod, then prints per job where
its pods run and what the cost model predicts for that placement against the lower bound and
Kueue TAS (the real Kueue when the control plane runs one, ``FABRICFIT_DEMO_PEER``; else its
BestFit, emulated), with the reason where the two differ (``reason.py``), and writes one SVG of
every job's placement. The cluster keeps running; ``make demo-down`` stops it (operator
included).
Options are environment variables: see ``python -m fabricfit_dev.demo --help`` (or ``options.py``).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit_dev import paths
from fabricfit_dev.cluster import binaries, controlplane, fakenodes
from fabricfit_dev.cluster.processes import ClusterError
from fabricfit_dev.demo import actions, peer, report, workloads
from fabricfit_dev.demo.baseline import JobView, PlacedJob, view_job
from fabricfit_dev.demo.options import HELP, OptionError, Options, from_env
from fabricfit_dev.demo.workloads import POOL_LABEL
from fabricfit_dev.kube import Clients
from fabricfit_dev.operator import ATTACHED_NAME
from fabricfit_dev.waiting import WaitTimeoutError

STEPS = 9
PEER_NOTE = (
    "Per job: where kube-scheduler bound each pod (fabricfit pinned them), and the step "
    "communication the cost model predicts for it, next to what Kueue TAS {how} with the same "
    "job on the same free GPUs, priced by the same model. {which}"
)
REAL_PEER = (
    "Kueue is real: the Kueue controller on this control plane placed each job first "
    "(podset-preferred-topology at the rail-group level{nvl72}), then the job was deleted and "
    "fabricfit placed it."
)
EMULATED_PEER = (
    "Kueue is emulated (its BestFit, preferred at the rail-group level{nvl72}, ranks in "
    "lexicographic order; this cluster runs no Kueue: FABRICFIT_DEMO_PEER=kueue starts one); "
    "make\N{NO-BREAK SPACE}bench-kueue compares against a real Kueue."
)
NOTE_WIDTH = 92


def peer_note(real: bool, nvl72: bool = False) -> str:
    which = (REAL_PEER if real else EMULATED_PEER).format(
        nvl72=", the NVL72 job's at the NVLink domain" if nvl72 else ""
    )
    note = PEER_NOTE.format(how="did" if real else "would do", which=which)
    return textwrap.fill(note, NOTE_WIDTH).replace("\N{NO-BREAK SPACE}", " ")


class Progress:
    def __init__(self) -> None:
        self.started = time.monotonic()
        self.count = 0

    def step(self, message: str) -> None:
        self.count += 1
        print(f"==> [{self.count}/{STEPS}] {message}  ({self.elapsed()})", flush=True)

    def say(self, message: str) -> None:
        print(f"    {message}", flush=True)

    def elapsed(self) -> str:
        return f"{time.monotonic() - self.started:.1f} s"


@dataclass(frozen=True)
class Inputs:
    """What the demo creates: nodes (main pool, then the NVL72 racks), tenants, jobs."""

    manifests: list[dict[str, Any]]
    tenants: list[workloads.TenantPod]
    jobs: tuple[workloads.DemoJob, ...]
    nvl72_trays: int = 0


def plan_inputs(options: Options) -> Inputs:
    """Nodes, tenants and jobs for ``options``; OptionError when the jobs cannot fit."""
    manifests = fakenodes.node_manifests(options.fake_fabric())
    names = [str(m["metadata"]["name"]) for m in manifests]
    gpus = options.gpus_per_node
    tenants = workloads.plan_tenants(names, options.tenant_share, options.seed, gpus)
    free = workloads.free_whole_nodes(names, tenants)
    jobs = workloads.choose_jobs(options.jobs, free, gpus)
    need = workloads.nodes_needed(jobs, gpus)
    if free < need:
        raise OptionError(
            f"the demo jobs need {need} nodes' worth of GPUs but only {free} of {len(names)} "
            "nodes are free of other tenants; raise FABRICFIT_DEMO_NODES or lower "
            "FABRICFIT_DEMO_TENANT_SHARE"
        )
    racks, theirs = nvl72_inputs(options)
    if not racks:
        return Inputs(manifests, tenants, jobs)
    return Inputs(
        [*manifests, *racks], [*tenants, *theirs], (*jobs, workloads.NVL72_JOB), len(racks)
    )


def nvl72_inputs(
    options: Options,
) -> tuple[list[dict[str, Any]], list[workloads.TenantPod]]:
    """The NVL72 racks' trays and tenants (none without racks); OptionError when the NVL72 job
    cannot fit."""
    fabric = options.nvl72_fabric()
    if fabric is None:
        return [], []
    racks = fakenodes.node_manifests(fabric)
    trays = [str(m["metadata"]["name"]) for m in racks]
    tenants = workloads.plan_nvl72_tenants(trays, options.seed)
    free = workloads.free_per_rack(trays, tenants, fabric.nodes_per_rack)
    job = workloads.NVL72_JOB
    if workloads.room_in_racks(free, job) < job.pods:
        raise OptionError(
            f"the NVL72 job needs {job.pods} trays, each tensor group's in one rack, but other "
            f"tenants leave {', '.join(map(str, free))} free in the racks; try another "
            "FABRICFIT_DEMO_SEED or more FABRICFIT_DEMO_NVL72_RACKS (0 leaves the racks out)"
        )
    return racks, tenants


def run(options: Options, progress: Progress) -> int:
    inputs = plan_inputs(options)
    hack_cluster = str(paths.CLUSTER_SCRIPT)
    extra = ["--with", "kueue"] if options.peer == "kueue" else []
    progress.step(f"control-plane binaries (hack/cluster build {' '.join(extra)})".rstrip())
    subprocess.run([hack_cluster, "build", *extra], check=True)
    progress.step("local control plane")
    if extra:  # starts the control plane with Kueue, or adds Kueue to the running one
        subprocess.run([hack_cluster, "up", *extra], check=True, stdout=subprocess.DEVNULL)
    state = controlplane.up(binaries.require(), progress.say)
    real_peer = options.peer == "kueue" or (options.peer == "auto" and peer.runs_kueue(state))
    kubectl = [str(binaries.locate().kubectl), f"--kubeconfig={state.kubeconfig}"]
    clients = Clients.connect(state.kubeconfig)
    progress.step("TrainingTopology CRD (kubectl apply -f crds/)")
    actions.apply_crds(kubectl)
    progress.step("clean slate: stop an earlier demo operator, empty the demo namespaces")
    if controlplane.detach(state, ATTACHED_NAME):
        progress.say("stopped the operator of an earlier run")
    for namespace in (actions.JOBS_NAMESPACE, actions.TENANTS_NAMESPACE, peer.NAMESPACE):
        actions.reset_namespace(clients, namespace)
    held = populate(clients, options, inputs, progress)
    progress.step("fabricfit operator (fabricfit run --standalone)")
    operator, metrics_url = actions.start_operator(state)
    progress.say(f"pid {operator.pid}, log {operator.log}")
    progress.step(f"submitting {len(inputs.jobs)} training jobs and waiting for kube-scheduler")
    theirs = prepare_kueue(clients, options, inputs, progress) if real_peer else None
    statuses, peer_nodes = place_jobs(clients, options, inputs.jobs, theirs, progress)
    progress.step("reading the cluster back and pricing each placement")
    views = build_views(clients, inputs.jobs, statuses, peer_nodes)
    print()
    print(peer_note(real_peer, bool(inputs.nvl72_trays)))
    print()
    for job, view in zip(inputs.jobs, views, strict=True):
        print("\n".join(report.job_lines(job, view)))
        for line in report.compute_domain_lines(statuses[job.name].get("status") or {}):
            print(line)
        print()
    print("\n".join(report.summary_lines(inputs.jobs, views)))
    print()
    svg_path = Path(options.svg) if options.svg else Path(state.directory) / "demo-placement.svg"
    svg_path.parent.mkdir(parents=True, exist_ok=True)
    heading = f"fabricfit demo: {', '.join(job.name for job in inputs.jobs)}"
    detail = [
        f"{nodes_line(options, inputs)}; {held} GPUs held by other tenants",
        "one panel per job: the cluster as the operator saw it when it placed the job",
    ]
    svg_path.write_text(report.build_demo_svg(inputs.jobs, views, heading, detail))
    print(f"SVG of every job's placement: {svg_path}")
    print_epilogue(state, kubectl[0], metrics_url, operator.log, progress)
    return 0


def nodes_line(options: Options, inputs: Inputs) -> str:
    fabric = options.fake_fabric()
    line = (
        f"{fabric.node_count} fake {options.fabric} nodes: {options.spines} spines × "
        f"{options.rail_groups} rail groups × {options.nodes} nodes, racks of "
        f"{options.rack_size}, {options.scheme} labels"
    )
    if inputs.nvl72_trays:
        line += (
            f"; {inputs.nvl72_trays} GB200 trays in {options.nvl72_racks} NVL72 racks "
            f"(spine and pool {workloads.NVL72_POOL} of their own)"
        )
    return line


def populate(clients: Clients, options: Options, inputs: Inputs, progress: Progress) -> int:
    """Steps 5 and 6: the fake nodes and the other tenants' pods; returns the GPUs held."""
    progress.step(nodes_line(options, inputs))
    created, kept = actions.ensure_nodes(clients, inputs.manifests)
    progress.say(f"{created} created, {kept} kept from an earlier run; all Ready")
    held = sum(t.gpus for t in inputs.tenants)
    gpus = sum(int(m["status"]["allocatable"][workloads.GPU]) for m in inputs.manifests)
    nvl72 = (
        f"; {workloads.NVL72_TENANT_SHARE:.0%} of the NVL72 racks' GPUs"
        if inputs.nvl72_trays
        else ""
    )
    progress.step(
        f"other tenants: {len(inputs.tenants)} pods holding {held} of {gpus} GPUs "
        f"on {len({t.node for t in inputs.tenants})} nodes (seed {options.seed}{nvl72})"
    )
    actions.create_tenants(clients, inputs.tenants)
    return held


#: Per node pool: the LocalQueue of its Kueue chain, the Topology's levels, its nodes.
Queues = dict[str, tuple[str, list[str], list[dict[str, Any]]]]


def prepare_kueue(clients: Clients, options: Options, inputs: Inputs, progress: Progress) -> Queues:
    """A Kueue chain per demo pool the run uses (an earlier run's chains deleted first)."""
    peer.reset(clients)
    queues: Queues = {}
    for pool in workloads.POOLS:
        nodes = [m for m in inputs.manifests if m["metadata"]["labels"][POOL_LABEL] == pool]
        if not nodes:
            continue
        levels = peer.topology_levels(options.scheme, nodes)
        gpus = sum(int(m["status"]["allocatable"][workloads.GPU]) for m in nodes)
        queues[pool] = (peer.prepare(clients, pool, levels, gpus), levels, nodes)
        progress.say(f"Kueue TAS first; pool {pool}: a Topology of {', '.join(levels)}")
    return queues


def place_jobs(
    clients: Clients,
    options: Options,
    jobs: Sequence[workloads.DemoJob],
    queues: Queues | None,
    progress: Progress,
) -> tuple[dict[str, dict[str, Any]], dict[str, list[str]]]:
    """Each job placed by Kueue TAS first (when ``queues``), then by fabricfit; returns the
    topologies once Placed and Kueue's node per pod, by job name."""
    statuses: dict[str, dict[str, Any]] = {}
    theirs: dict[str, list[str]] = {}
    for job in jobs:
        if queues is not None:
            queue, levels, nodes = queues[job.pool]
            level = peer.preferred_level(options.scheme, levels, nodes, job.kueue_tier)
            theirs[job.name] = peer.place(clients, job, queue, level)
            progress.say(f"{job.name}: Kueue TAS bound its {job.pods} pods; deleted again")
        topology = workloads.topology_manifest(job, options.fabric, options.scheme)
        actions.submit(clients, job, topology)
        bound = actions.wait_bound(clients, job)
        statuses[job.name] = actions.wait_status(clients, job)
        progress.say(f"{job.name}: {job.pods} pods bound on {len(set(bound))} nodes")
    return statuses, theirs


def build_views(
    clients: Clients,
    jobs: Sequence[workloads.DemoJob],
    statuses: dict[str, dict[str, Any]],
    theirs: dict[str, list[str]],
) -> list[JobView]:
    nodes, pods = actions.read_cluster(clients)
    views = []
    for position, job in enumerate(jobs):
        bound = actions.bound_nodes(clients, job)
        if bound is None:
            raise actions.DemoError(f"{job.name}: pods are no longer all bound")
        tt = statuses[job.name]
        spec = TrainingTopologySpec.model_validate(tt["spec"])
        status: dict[str, Any] = dict(tt.get("status") or {})
        planned = [p["node"] for p in sorted(status["pods"], key=lambda p: p["index"])]
        if planned != bound:
            raise actions.DemoError(f"{job.name}: pods are not where the operator planned them")
        later = [j.name for j in jobs[position + 1 :]]
        placed = PlacedJob(job.name, actions.JOBS_NAMESPACE, spec, status, bound, job.kueue_tier)
        # The nodes its pods may use: the emulation knows no nodeSelector.
        pool = [n for n in nodes if n["metadata"]["labels"].get(POOL_LABEL) == job.pool]
        views.append(view_job(placed, pool, pods, later, theirs.get(job.name)))
    return views


def print_epilogue(
    state: controlplane.State, kubectl: str, metrics_url: str, log: str, progress: Progress
) -> None:
    print(f"demo ready in {progress.elapsed()}. The cluster keeps running; look around:")
    print(f"  KUBECONFIG={state.kubeconfig} {kubectl} get tt -n {actions.JOBS_NAMESPACE}")
    print(f"  KUBECONFIG={state.kubeconfig} {kubectl} get pods -n {actions.JOBS_NAMESPACE} -o wide")
    print(f"  curl -s {metrics_url} | grep '^fabricfit_'")
    print(f"  operator log: {log}")
    print("Stop it: make demo-down   (or hack/cluster down)")


def main(argv: Sequence[str] = ()) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        print(HELP, end="")
        return 0
    if argv:
        print(
            f"demo: unexpected argument {argv[0]!r} "
            "(options are environment variables; see --help)",
            file=sys.stderr,
        )
        return 2
    try:
        options = from_env()
        progress = Progress()
        return run(options, progress)
    except OptionError as err:
        print(f"demo: {err}", file=sys.stderr)
        return 2
    except (actions.DemoError, ClusterError, TimeoutError, WaitTimeoutError) as err:
        print(f"demo: {err}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as err:
        print(
            f"demo: {' '.join(map(str, err.cmd))} failed (exit {err.returncode})", file=sys.stderr
        )
        return 1
    except KeyboardInterrupt:
        print(
            "demo: interrupted (the cluster is left as it is; make demo-down stops it)",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
