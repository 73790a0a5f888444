"""``fabricfit simulate``: replay a job trace on a cluster dump with fabricfit and the peers.

Theory of operation
-------------------
Read the node dump (``kubectl get nodes -o yaml|json``; the pods dump is optional and its pods
hold their GPUs throughout) and the trace (:mod:`fabricfit.simulation.trace`), pick
the fabric profile as ``plan`` does (``--fabric``, else the nodes' fabric, else ``dgx-h100``),
and replay the trace once per placer (``--placer``, default all three) with the pure simulation
(:mod:`fabricfit.simulation`), each placement priced next to the running jobs' traffic
(``--contention``, on by default: unlike the operator, which cannot see traffic it did not
place, a replay knows every job it runs; ``off`` prices each job as if alone, the figures of
earlier releases); ``--queue-policy wait-if-faster`` lets fabricfit hold
the head of the queue when waiting lets it finish sooner, backfilling the jobs behind it that do
not delay it (the peers stay strictly FIFO: they cannot price a placement). Text output is a
table of jobs per placer and a comparison table; ``--json`` prints one object with the same
figures plus the utilisation and fragmentation series. Bad input is one line on stderr and
exit 2; exit 0 otherwise (a job that never fits is reported, not an error).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from fabricfit.cli.common import EXIT_OK, UsageError, profile_name
from fabricfit.cli.inputs import read_objects, shown
from fabricfit.cli.output import add_output_arguments, emit, output_format
from fabricfit.cli.progress import Progress
from fabricfit.fabric.profiles import DEFAULT_PROFILE, FabricProfile
from fabricfit.fabric.profiles.catalog import Catalog
from fabricfit.fabric.profiles.choice import FabricChoiceError, choose_profile
from fabricfit.fabric.schemes import NAMES as LABEL_SCHEMES
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.neighbours import Neighbours
from fabricfit.placement.request import PlacementRequest
from fabricfit.simulation import (
    FABRICFIT,
    PLACERS,
    QUEUE_POLICIES,
    STRICT_FIFO,
    Placed,
    Placer,
    Replay,
    Rules,
    Summary,
    TraceError,
    TraceJob,
    parse_trace,
    replay,
    summarize,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes", required=True, metavar="NODES", help="kubectl get nodes -o yaml|json output"
    )
    parser.add_argument(
        "--pods", metavar="PODS", help="kubectl get pods -A -o yaml|json output (held throughout)"
    )
    parser.add_argument(
        "--trace", required=True, metavar="TRACE", help="job trace, YAML or JSON (see README)"
    )
    parser.add_argument(
        "--placer",
        choices=tuple(PLACERS),
        help="replay with this placer only (default: every placer)",
    )
    parser.add_argument(
        "--queue-policy",
        choices=QUEUE_POLICIES,
        default=STRICT_FIFO,
        help="fabricfit's queue: start the head when it fits, or hold it when waiting for "
        "running jobs to end (by the trace's durations) lets it finish sooner, backfilling "
        "jobs behind it that do not delay it",
    )
    parser.add_argument(
        "--contention",
        choices=("on", "off"),
        default="on",
        help="price every placement next to the running jobs' traffic on the links it shares, "
        "for every placer (default on: the replay knows every job it runs)",
    )
    parser.add_argument(
        "--fabric", type=profile_name, help="fabric profile (default: the nodes' fabric)"
    )
    parser.add_argument(
        "--label-scheme", default="auto", choices=LABEL_SCHEMES, help="node label scheme"
    )
    add_output_arguments(parser)


def execute(args: argparse.Namespace) -> int:
    nodes = read_objects(args.nodes, "nodes", "Node")
    pods = read_objects(args.pods, "pods", "Pod") if args.pods else []
    jobs = read_trace(args.trace)
    snapshot = build_snapshot(nodes, pods, scheme=args.label_scheme, default_fabric=DEFAULT_PROFILE)
    if not any(n.gpus for n in snapshot.nodes):
        raise UsageError(f"nodes file {shown(args.nodes)}: no node has GPUs")
    profile, why = _profile(args.fabric, snapshot)
    names = [args.placer] if args.placer else list(PLACERS)
    fmt = output_format(args)
    with Progress("fabricfit simulate", enabled=fmt is None) as progress:
        runs = [_replay(args, (snapshot, profile), jobs, n, progress) for n in names]
    if fmt:
        emit(as_json(runs, profile.name, why), fmt)
    else:
        sys.stdout.write(render_text(runs, profile.name, why))
    return EXIT_OK


def _replay(
    args: argparse.Namespace,
    cluster: tuple[ClusterSnapshot, FabricProfile],
    jobs: Sequence[TraceJob],
    name: str,
    progress: Progress,
) -> Replay:
    snapshot, profile = cluster
    progress.update(phase=f"placer {name}, jobs reached")
    try:
        return replay(
            snapshot,
            jobs,
            profile,
            placer=_reporting(PLACERS[name], len(jobs), progress),
            name=name,
            rules=Rules(
                queue_policy=args.queue_policy if name == FABRICFIT else STRICT_FIFO,
                contention=args.contention == "on",
            ),
        )
    except ValueError as err:  # e.g. the cost model cannot price this fabric/job pairing
        raise UsageError(f"cannot simulate on fabric {profile.name}: {err}") from None


def _reporting(placer: Placer, total: int, progress: Progress) -> Placer:
    """``placer``, telling ``progress`` how many jobs it has been asked to place so far (each
    job's request is one object, asked again while the job waits)."""
    seen: set[int] = set()

    def place(
        snapshot: ClusterSnapshot,
        request: PlacementRequest,
        profile: FabricProfile,
        neighbours: Neighbours | None = None,
    ) -> Placed | None:
        seen.add(id(request))
        progress.update(done=len(seen), total=total)
        return placer(snapshot, request, profile, neighbours)

    return place


def read_trace(path: str) -> tuple[TraceJob, ...]:
    objects = read_objects(path, "trace")
    if len(objects) != 1:
        raise UsageError(f"trace file {shown(path)}: expected one mapping with a jobs list")
    try:
        return parse_trace(objects[0])
    except TraceError as err:
        raise UsageError(f"trace file {shown(path)}: {err}") from None


def _profile(requested: str | None, snapshot: ClusterSnapshot) -> tuple[FabricProfile, str]:
    try:
        choice = choose_profile(
            snapshot.nodes,
            spec_fabric=None,
            default=DEFAULT_PROFILE,
            catalog=Catalog(),
            requested=requested,
        )
    except FabricChoiceError as err:
        raise UsageError(str(err)) from None
    return choice.profile, choice.reason


def summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "placed": summary.placed,
        "unplaceable": summary.unplaceable,
        "waitMeanSeconds": summary.wait_mean_s,
        "waitP95Seconds": summary.wait_p95_s,
        "makespanSeconds": summary.makespan_s,
        "utilisationMean": summary.utilisation_mean,
        "commGpuSeconds": summary.comm_gpu_seconds,
        "commShare": summary.comm_share,
        "contentionGpuSeconds": summary.contention_gpu_seconds,
        "spineBytes": summary.spine_bytes,
        "largestRailGroupGpusMean": summary.largest_rail_group_gpus_mean,
        "largestRailGroupGpusMin": summary.largest_rail_group_gpus_min,
    }


def as_json(runs: Sequence[Replay], fabric: str, why: str) -> dict[str, Any]:
    """The ``--json`` object (camelCase, like the CRD)."""
    return {
        "fabric": fabric,
        "fabricReason": why,
        "placers": {
            run.placer: {
                "queuePolicy": run.queue_policy,
                "contention": run.contention,
                "heldJobs": run.held_jobs,
                "backfilledJobs": run.backfilled_jobs,
                "summary": summary_json(summarize(run)),
                "totalGpus": run.total_gpus,
                "jobs": [
                    {
                        "name": j.name,
                        "gpus": j.gpus,
                        "arrival": j.arrival,
                        "start": j.start,
                        "end": j.end,
                        "waitSeconds": j.wait,
                        "nodes": j.nodes,
                        "stepCommSeconds": j.step_comm_seconds,
                        "commGpuSeconds": j.comm_gpu_seconds,
                        "contentionGpuSeconds": j.contention_gpu_seconds,
                        "spineBytes": j.spine_bytes,
                        "reason": j.reason,
                        "held": j.held,
                        "backfilled": j.backfilled,
                    }
                    for j in run.jobs
                ],
                "utilisation": [
                    [s.time, s.used_gpus / max(1, run.total_gpus)] for s in run.samples
                ],
                "largestRailGroupGpus": [[s.time, s.largest_rail_group_gpus] for s in run.samples],
            }
            for run in runs
        },
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def render_text(runs: Sequence[Replay], fabric: str, why: str) -> str:
    contention = "on" if any(r.contention for r in runs) else "off"
    lines = [f"fabric {fabric}: {why}; contention {contention}", ""]
    for run in runs:
        policy = "" if run.queue_policy == STRICT_FIFO else f" (queue {run.queue_policy})"
        held = (
            f", {_count(run.held_jobs, 'job')} held, {run.backfilled_jobs} backfilled"
            if run.held_jobs
            else ""
        )
        lines.append(f"placer {run.placer}{policy}{held}")
        lines.append(
            f"{'job':<28} {'GPUs':>5} {'arrive s':>9} {'wait s':>9} {'nodes':>5} "
            f"{'comm ms/step':>12} {'comm GPU-h':>10} {'spine TB':>9}"
        )
        for j in run.jobs:
            if j.reason is not None:
                lines.append(
                    f"{j.name[:28]:<28} {j.gpus:>5} {j.arrival:>9.0f}  never placed: {j.reason}"
                )
                continue
            lines.append(
                f"{j.name[:28]:<28} {j.gpus:>5} {j.arrival:>9.0f} {_fmt(j.wait, '9.0f')} "
                f"{j.nodes:>5} {j.step_comm_seconds * 1e3:>12.2f} "
                f"{j.comm_gpu_seconds / 3600:>10.2f} {j.spine_bytes / 1e12:>9.2f}"
                + ("  held" if j.held else "")
                + ("  backfilled" if j.backfilled else "")
            )
        lines.append("")
    lines.append(comparison_table(runs))
    return "\n".join(lines) + "\n"


def comparison_table(runs: Sequence[Replay]) -> str:
    """One row per placer: the figures the issue asks for, side by side."""
    head = (
        f"{'placer':<14} {'placed':>6} {'wait mean s':>11} {'wait p95 s':>10} "
        f"{'makespan h':>10} {'util':>5} {'comm GPU-h':>10} {'comm %':>6} "
        f"{'of it contention':>16} {'spine TB':>9} {'largest RG GPUs mean/min':>24}"
    )
    rows = [head]
    for run in runs:
        s = summarize(run)
        rows.append(
            f"{run.placer:<14} {s.placed:>6} {s.wait_mean_s:>11.0f} {s.wait_p95_s:>10.0f} "
            f"{s.makespan_s / 3600:>10.2f} {s.utilisation_mean:>5.0%} "
            f"{s.comm_gpu_seconds / 3600:>10.1f} {s.comm_share:>6.1%} "
            f"{s.contention_gpu_seconds / 3600:>13.1f} h {s.spine_bytes / 1e12:>9.1f} "
            f"{s.largest_rail_group_gpus_mean:>18.0f} / {s.largest_rail_group_gpus_min:<3}"
        )
    return "\n".join(rows)
