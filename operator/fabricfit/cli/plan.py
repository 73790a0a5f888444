"""``fabricfit plan``: plan a placement offline from a node dump and a TrainingTopology.

Theory of operation
-------------------
Read the files (``kubectl get nodes -o yaml|json``, optionally ``kubectl get pods -A``,
``kubectl get resourceslices`` and ``kubectl get resourceclaims -A`` for GPUs handed out by
DRA, and a TrainingTopology object or a bare spec, with the workload it names and the
ResourceClaimTemplates its pods claim GPUs through), bounded and total
(:mod:`fabricfit.cli.inputs`, :mod:`fabricfit.fabric.documents`); check every object is of the
kind its flag expects; hand the spec and workload to the policy the operator uses
(:func:`fabricfit.policy.admit`: schema, CRD rules and bounds, template choice — before
any search); build the snapshot, resolve the fabric profile, call the pure planner, print a
summary or one JSON object, optionally write an SVG. With ``--running`` (a dump of
TrainingTopologies) the plan is priced next to the traffic of the jobs their status records as
planned (:mod:`fabricfit.cli.running`). Every input problem is one line on stderr
and exit 2; infeasible is exit 1; placed is exit 0 (``cli.main`` turns anything unforeseen into
exit 3). This module imports neither kopf nor the Kubernetes client (~1.5 s of start-up).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.cli.common import EXIT_INFEASIBLE, EXIT_OK, UsageError, profile_name
from fabricfit.cli.dra import add_dra_arguments, claim_objects, read_dra
from fabricfit.cli.fabrics import read_profile_dir, read_profile_file
from fabricfit.cli.inputs import read_objects, shown
from fabricfit.cli.output import add_output_arguments, emit, output_format
from fabricfit.cli.pairing import Paired, add_pairing_argument, read_paired
from fabricfit.cli.progress import Progress
from fabricfit.cli.running import KIND, Running, key_of, running_jobs
from fabricfit.cli.serving import serving_json, serving_lines
from fabricfit.fabric.detection import Detection, describe, detect_tiers, flat_warning
from fabricfit.fabric.objects import kind_of, mapping_at, str_at
from fabricfit.fabric.podclaims import pod_claim_gpus
from fabricfit.fabric.profiles import DEFAULT_PROFILE, FabricProfile, ProfileError
from fabricfit.fabric.profiles.catalog import Catalog
from fabricfit.fabric.schemes import NAMES as LABEL_SCHEMES
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.decision import PlacementDecision
from fabricfit.placement.nvlink_span import decision_span
from fabricfit.placement.search import plan_placement
from fabricfit.policy import Admission, admit, choose_fabric
from fabricfit.policy.devices import settle_devices
from fabricfit.render.computedomain import need_json, need_line
from fabricfit.render.devices import gpu_allocation
from fabricfit.render.summary import render_summary
from fabricfit.render.svg import build_svg
from fabricfit.workloads import kind_named
from fabricfit.workloads.pod import POD, pod_group

# A plan shows progress only once it has taken this long: most take well under a second.
PROGRESS_DELAY_SECONDS = 1.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes",
        required=True,
        metavar="NODES.yaml",
        help="kubectl get nodes -o yaml|json output (- for stdin)",
    )
    parser.add_argument(
        "--pods", metavar="PODS.yaml", help="kubectl get pods -A -o yaml|json output (- for stdin)"
    )
    add_dra_arguments(parser)
    parser.add_argument(
        "--topology",
        required=True,
        metavar="TT.yaml",
        help="a TrainingTopology object (or its bare spec), and the workload it names",
    )
    add_pairing_argument(parser)
    parser.add_argument(
        "--running",
        metavar="TTS.yaml",
        help="kubectl get tt -A -o yaml|json output: plan next to the traffic of the jobs "
        "their status records as planned",
    )
    add_output_arguments(parser)
    parser.add_argument("--svg", metavar="OUT", help="write an SVG picture of the plan to OUT")
    parser.add_argument(
        "--fabric",
        type=profile_name,
        help="fabric profile (overrides spec.fabric and node labels)",
    )
    parser.add_argument(
        "--fabric-file",
        metavar="PROFILE.yaml",
        help="use the custom fabric profile in this file (like --fabric; e.g. from calibrate)",
    )
    parser.add_argument(
        "--fabric-dir",
        metavar="DIR",
        help="custom profiles spec.fabric and node labels may name, as fabricfit run reads them",
    )
    parser.add_argument(
        "--label-scheme",
        choices=LABEL_SCHEMES,
        help="node label scheme (overrides spec.labelScheme)",
    )


def parse_topology(
    objects: list[dict[str, Any]], path: str
) -> tuple[object, dict[str, Any] | None]:
    """The raw spec of the single TrainingTopology (or bare spec) in ``objects``, and the
    workload it names when that workload is in the same file."""
    for number, obj in enumerate(objects, start=1):
        for field in ("metadata", "spec"):
            if field in obj and not isinstance(obj[field], dict):
                raise UsageError(
                    f"topology file {shown(path)}: object {number}: {field} is "
                    f"{kind_of(obj[field])}, not a mapping"
                )
    topologies = [o for o in objects if o.get("kind") == "TrainingTopology"]
    if not topologies and len(objects) == 1 and "kind" not in objects[0]:
        topologies = [{"spec": objects[0]}] if "spec" not in objects[0] else objects
    if len(topologies) != 1:
        raise UsageError(
            f"topology file {shown(path)}: expected one TrainingTopology, found {len(topologies)}"
        )
    raw = topologies[0].get("spec")
    if raw is None:
        raise UsageError(f"topology file {shown(path)}: the TrainingTopology has no spec")
    return raw, _workload(raw, objects)


def _workload(raw: object, objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The object the spec's workloadRef names, as the operator would read it (plain Pods:
    the pods its podSelector matches, by name)."""
    ref = raw.get("workloadRef") if isinstance(raw, dict) else None
    if not isinstance(ref, dict) or not isinstance(ref.get("kind"), str):
        return None
    kind = kind_named(ref["kind"])
    if kind is not None and kind.selects_pods:
        return _pod_group(ref.get("podSelector"), objects)
    for obj in objects:
        if obj.get("kind") == ref["kind"] and str_at(obj, "metadata", "name") == ref.get("name"):
            return obj
    return None


def _pod_group(selector: object, objects: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not isinstance(selector, dict) or not selector:
        return None
    pods = [
        o
        for o in objects
        if o.get("kind") == POD.name
        and all(mapping_at(o, "metadata", "labels").get(k) == v for k, v in selector.items())
    ]
    pods.sort(key=lambda o: str_at(o, "metadata", "name") or "")
    return pod_group(pods)


def _choose_fabric(
    args: argparse.Namespace, admission: Admission, snapshot: ClusterSnapshot
) -> tuple[FabricProfile, str]:
    """The operator's fabric choice (:func:`fabricfit.fabric.profiles.choice.choose_profile`), with
    ``--fabric``/``--fabric-file`` first and ``--fabric-dir``'s profiles known."""
    if args.fabric and args.fabric_file:
        raise UsageError("give --fabric or --fabric-file, not both")
    catalog = read_profile_dir(args.fabric_dir, strict=True) if args.fabric_dir else Catalog()
    requested: FabricProfile | str | None = args.fabric
    if args.fabric_file:
        requested = read_profile_file(args.fabric_file)
    flag = "--fabric-file" if args.fabric_file else "--fabric"
    try:
        assert admission.spec is not None
        return choose_fabric(
            admission.spec,
            snapshot,
            DEFAULT_PROFILE,
            catalog=catalog,
            request=admission.request,
            override=(requested, flag) if requested is not None else None,
        )
    except ProfileError as err:
        raise UsageError(str(err)) from None


@dataclass(frozen=True)
class Planned:
    """A plan and what its output needs besides the decision."""

    decision: PlacementDecision
    snapshot: ClusterSnapshot
    spec: TrainingTopologySpec
    fabric_reason: str
    allocation: dict[str, Any] | None
    profile: FabricProfile
    running: Running | None = None
    paired: Paired | None = None
    gpu_choice_reason: str = ""


def execute(args: argparse.Namespace) -> int:
    fmt = output_format(args)
    with Progress("fabricfit plan", enabled=fmt is None, delay_seconds=PROGRESS_DELAY_SECONDS) as p:
        planned = plan(args, p)
    decision, snapshot = planned.decision, planned.snapshot
    if args.svg:
        _write_svg(args.svg, build_svg(decision, snapshot))
    span = decision_span(decision, snapshot, planned.spec.gpus_per_pod, planned.profile)
    defaulted = planned.spec.defaulted()
    detection = detect_tiers(snapshot)
    flat = flat_warning(detection)
    if fmt:
        body = {
            **decision.to_json_dict(),
            "fabric_reason": planned.fabric_reason,
            "compute_domain": need_json(span),
            "defaulted": list(defaulted),
            "gpu_choice_reason": planned.gpu_choice_reason,
            **topology_json(detection),
        }
        if flat is not None:
            body["efficiency"] = None  # a flat fabric makes every placement look optimal
        if planned.allocation is not None:
            body["gpu_allocation"] = planned.allocation
        if planned.spec.serving is not None:
            body["serving"] = serving_json(planned.spec, decision)
            body["paired"] = planned.paired.to_json_dict() if planned.paired else None
        if planned.running is not None:
            body["running"] = planned.running.to_json_dict()
        emit(body, fmt, indent=1, sort_keys=False)
    else:
        sys.stdout.write(render_summary(decision, snapshot, flat))
        print(f"fabric {decision.fabric}: {planned.fabric_reason}")
        if defaulted:
            print(f"defaulted (not in the spec): {_defaults_line(defaulted)}")
        if planned.running is not None:
            print(planned.running.line(shown(args.running)))
        choice = decision.gpu_choice.replace("-", " ")
        print(f"GPUs: {choice}: {planned.gpu_choice_reason}")
        if (line := need_line(span)) is not None:
            print(line)
        for line in serving_lines(planned.spec, decision, planned.paired):
            print(line)
    return EXIT_OK if decision.feasible else EXIT_INFEASIBLE


def plan(args: argparse.Namespace, progress: Progress) -> Planned:
    """Read the inputs, admit the spec as the operator does, and plan."""
    progress.update(phase="reading the inputs")
    nodes = read_objects(args.nodes, "nodes", kind="Node")
    pods = read_objects(args.pods, "pods", kind="Pod") if args.pods else []
    slices, claims = read_dra(args)
    topology_objects = read_objects(args.topology, "topology")
    raw_spec, workload = parse_topology(topology_objects, args.topology)
    claimable = claim_objects(topology_objects, claims)
    admission = admit(raw_spec, workload, require_workload=False, claims=claimable)
    if admission.spec is None or admission.request is None:
        raise UsageError(f"topology file {shown(args.topology)}: {admission.message}")
    spec = admission.spec
    progress.update(phase=f"reading {len(nodes):,} nodes")
    # As the operator with its defaults: unlabelled nodes are of its default fabric.
    snapshot = build_snapshot(
        nodes,
        pods,
        scheme=args.label_scheme or spec.label_scheme,
        default_fabric=DEFAULT_PROFILE,
        resource_slices=slices,
        resource_claims=claims,
    )
    profile, why = _choose_fabric(args, admission, snapshot)
    running = _running(args, topology_objects, snapshot, profile)
    request, paired = admission.request, None
    if args.paired:
        progress.update(phase="reading the paired TrainingTopology")
        paired = read_paired(args.paired, spec, snapshot, profile, pods)
        request = replace(request, partner=paired.partner)
    neighbours = running.neighbours if running is not None else None
    # the running jobs' GPUs are held: by their pods when the pods dump is given, else here
    held = dict(running.held) if running is not None and not args.pods else {}
    if paired is not None:
        held = dict(Counter(held) + Counter(paired.reservations))
    progress.update(phase=f"placing {spec.world_size:,} ranks on {profile.name}")
    choice = settle_devices(request, admission.devices, snapshot)
    try:
        decision = plan_placement(
            choice.snapshot, choice.request, profile, reservations=held, neighbours=neighbours
        )
    except ValueError as err:  # e.g. the cost model cannot price this fabric/job pairing
        raise UsageError(f"cannot plan on fabric {profile.name}: {err}") from None
    claimed = pod_claim_gpus(admission.template, claimable)
    allocation = gpu_allocation(claimed, admission.devices)
    return Planned(
        decision, snapshot, spec, why, allocation, profile, running, paired, choice.words
    )


def _defaults_line(defaulted: dict[str, Any]) -> str:
    """``model`` with the values assumed, or ``model.layers 32, ...``."""
    parts = []
    for name, value in defaulted.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} {v:,}" for k, v in value.items())
            parts.append(f"{name} ({inner})")
        else:
            parts.append(f"{name} {value:,}")
    return "; ".join(parts)


def _running(
    args: argparse.Namespace,
    topology_objects: list[dict[str, Any]],
    snapshot: ClusterSnapshot,
    profile: FabricProfile,
) -> Running | None:
    """The running jobs of ``--running`` (None without it), the planned job itself left out."""
    if not args.running:
        return None
    objects = read_objects(args.running, "running", kind=KIND)
    planned = [o for o in topology_objects if o.get("kind") == KIND]
    planning = key_of(planned[0]) if planned else None
    try:
        return running_jobs(objects, snapshot, profile, planning=planning)
    except ValueError as err:
        raise UsageError(f"running file {shown(args.running)}: {err}") from None


def topology_json(detection: Detection) -> dict[str, Any]:
    """``topologyDetected`` (any tier found) and ``topologyMessage`` (what was found, as the
    operator's ``TopologyDetected`` condition says it)."""
    return {"topologyDetected": detection.found, "topologyMessage": describe(detection)}


def _write_svg(path: str, svg: str) -> None:
    try:
        Path(path).write_text(svg, encoding="utf-8", errors="backslashreplace")
    except (OSError, ValueError) as err:
        reason = getattr(err, "strerror", None) or "invalid path"
        raise UsageError(f"cannot write SVG file {shown(path)}: {reason}") from None
