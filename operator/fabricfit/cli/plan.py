"""``fabricfit plan``: plan a placement offline from a node dump and a TrainingTopology.

Theory of operation
-------------------
Read the files (``kubectl get nodes -o yaml|json``, optionally ``kubectl get pods -A``, and a
TrainingTopology object or a bare spec), build the snapshot, resolve the fabric profile, call the
pure planner, print a summary or one JSON object, optionally write an SVG. Every input problem —
unreadable file, bad YAML/JSON, a spec pydantic rejects, an unknown fabric, a malformed pod
template — is one line on stderr and exit 2; infeasible is exit 1; placed is exit 0. This module
imports neither kopf nor the Kubernetes client (they cost ~1.5 s of start-up).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fabricfit.api.constants import LABEL_SCHEMES
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.cli.common import EXIT_INFEASIBLE, EXIT_OK, UsageError
from fabricfit.fabric.documents import DocumentError, load_objects
from fabricfit.fabric.profiles import DEFAULT_PROFILE, ProfileError, get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.request import request_from_spec
from fabricfit.placement.search import plan_placement
from fabricfit.render.kinds import kind_named
from fabricfit.render.summary import render_summary
from fabricfit.render.svg import build_svg


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes", required=True, metavar="NODES.yaml", help="kubectl get nodes -o yaml|json output"
    )
    parser.add_argument(
        "--pods", metavar="PODS.yaml", help="kubectl get pods -A -o yaml|json output"
    )
    parser.add_argument(
        "--topology",
        required=True,
        metavar="TT.yaml",
        help="a TrainingTopology object (or its bare spec)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--svg", metavar="OUT", help="write an SVG picture of the plan to OUT")
    parser.add_argument("--fabric", help="fabric profile (overrides spec.fabric and node labels)")
    parser.add_argument(
        "--label-scheme",
        choices=LABEL_SCHEMES,
        help="node label scheme (overrides spec.labelScheme)",
    )


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or str(err)
        raise UsageError(f"cannot read {what} file {path}: {reason}") from None


def _objects(path: str, what: str) -> list[dict[str, Any]]:
    try:
        return load_objects(_read(path, what))
    except DocumentError as err:
        raise UsageError(f"{what} file {path}: {err}") from None


def parse_topology(
    objects: list[dict[str, Any]], path: str
) -> tuple[TrainingTopologySpec, Mapping[str, Any] | None]:
    """The single TrainingTopology (or bare spec) in ``objects``, and the pod template of the
    workload it names when that workload is in the same file."""
    topologies = [o for o in objects if o.get("kind") == "TrainingTopology"]
    if not topologies and len(objects) == 1 and "kind" not in objects[0]:
        topologies = [{"spec": objects[0]}] if "spec" not in objects[0] else objects
    if len(topologies) != 1:
        raise UsageError(
            f"topology file {path}: expected one TrainingTopology, found {len(topologies)}"
        )
    raw = topologies[0].get("spec")
    if not isinstance(raw, dict):
        raise UsageError(f"topology file {path}: spec is missing or not a mapping")
    try:
        spec = TrainingTopologySpec.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "spec"
        raise UsageError(f"topology file {path}: spec.{where}: {first.get('msg')}") from None
    return spec, _workload_template(spec, objects)


def _workload_template(
    spec: TrainingTopologySpec, objects: list[dict[str, Any]]
) -> Mapping[str, Any] | None:
    ref = spec.workload_ref
    if ref is None:
        return None
    for obj in objects:
        meta = obj.get("metadata") or {}
        if obj.get("kind") == ref.kind and meta.get("name") == ref.name:
            return _pod_template_of(obj)
    return None


def _pod_template_of(obj: dict[str, Any]) -> Mapping[str, Any] | None:
    """The pod template carrying the ranks, as the operator picks it; a Pod is its own."""
    kind = kind_named(str(obj.get("kind")))
    if kind is None:
        return None
    return obj if kind.selects_pods else kind.rank_template(obj)


def choose_fabric(snapshot: ClusterSnapshot, *requested: str | None) -> str:
    """The first explicit request, else the most common node fabric, else the default."""
    for name in requested:
        if name:
            return name
    counts = Counter(n.fabric for n in snapshot.nodes if n.fabric and n.available)
    if counts:
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[0][0]
    return DEFAULT_PROFILE


def execute(args: argparse.Namespace) -> int:
    nodes = _objects(args.nodes, "nodes")
    pods = _objects(args.pods, "pods") if args.pods else []
    spec, template = parse_topology(_objects(args.topology, "topology"), args.topology)
    snapshot = build_snapshot(nodes, pods, scheme=args.label_scheme or spec.label_scheme)
    fabric = choose_fabric(snapshot, args.fabric, spec.fabric)
    try:
        profile = get_profile(fabric)
    except ProfileError as err:
        raise UsageError(str(err)) from None
    try:
        request = request_from_spec(spec, template)
    except ValueError as err:
        raise UsageError(f"topology file {args.topology}: {err}") from None
    try:
        decision = plan_placement(snapshot, request, profile)
    except ValueError as err:  # e.g. the cost model cannot price this fabric/job pairing
        raise UsageError(f"cannot plan on fabric {fabric}: {err}") from None
    if args.svg:
        try:
            Path(args.svg).write_text(build_svg(decision, snapshot), encoding="utf-8")
        except OSError as err:
            raise UsageError(f"cannot write SVG file {args.svg}: {err.strerror or err}") from None
    if args.json:
        print(json.dumps(decision.to_json_dict(), indent=1, sort_keys=False))
    else:
        sys.stdout.write(render_summary(decision, snapshot))
    return EXIT_OK if decision.feasible else EXIT_INFEASIBLE
