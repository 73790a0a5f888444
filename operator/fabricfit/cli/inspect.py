"""``fabricfit inspect``: what fabricfit detects in a node dump (offline).

Reads ``kubectl get nodes -o yaml|json`` (and optionally ``kubectl get pods -A``, and for GPUs
handed out by DRA ``kubectl get resourceslices`` / ``kubectl get resourceclaims -A``), reads the
nodes with the label scheme and prints the tiers found: per tier its domains with nodes and free
GPUs, the label keys read, and the nodes that carry no topology label. Run it before trusting a
plan: a cluster read with the wrong ``--label-scheme`` looks flat. Exit 0, or 2 with one line
on stderr for unreadable input. No kopf, no Kubernetes client.
"""

from __future__ import annotations

import argparse
from typing import Any

from fabricfit.cli.common import EXIT_OK, Parser
from fabricfit.cli.dra import add_dra_arguments, read_dra
from fabricfit.cli.inputs import read_objects
from fabricfit.cli.output import add_output_arguments, emit, output_format
from fabricfit.fabric.detection import Detection, count_of, describe, detect_tiers
from fabricfit.fabric.schemes import NAMES as LABEL_SCHEMES
from fabricfit.fabric.snapshot import build_snapshot

MAX_LISTED = 20  # nodes without labels named in the text output; --json lists all


def configure(parser: Parser) -> None:
    parser.add_argument(
        "--nodes", required=True, metavar="NODES", help="kubectl get nodes -o yaml|json output"
    )
    parser.add_argument("--pods", metavar="PODS", help="kubectl get pods -A -o yaml|json output")
    add_dra_arguments(parser)
    parser.add_argument(
        "--label-scheme", default="auto", choices=LABEL_SCHEMES, help="node label scheme"
    )
    add_output_arguments(parser)


def execute(args: argparse.Namespace) -> int:
    nodes = read_objects(args.nodes, "nodes", "Node")
    pods = read_objects(args.pods, "pods", "Pod") if args.pods else []
    slices, claims = read_dra(args)
    snapshot = build_snapshot(
        nodes, pods, scheme=args.label_scheme, resource_slices=slices, resource_claims=claims
    )
    detection = detect_tiers(snapshot, args.label_scheme)
    dra_nodes = sum(1 for node in snapshot.nodes if node.dra)
    if fmt := output_format(args):
        emit({**as_json(detection, args.label_scheme), "draNodes": dra_nodes}, fmt)
    else:
        text = render_text(detection)
        if dra_nodes:
            text += f"\nGPUs of {dra_nodes} nodes come from DRA ResourceSlices (gpu.nvidia.com)"
        print(text)
    return EXIT_OK


def as_json(detection: Detection, requested: str) -> dict[str, Any]:
    """The ``--json`` object (camelCase, like the CRD)."""
    return {
        "labelScheme": requested,
        "scheme": detection.scheme,
        "topologyDetected": detection.found,
        "nodes": detection.nodes,
        "gpus": detection.gpus,
        "freeGpus": detection.free_gpus,
        "tiers": [
            {
                "tier": tier.tier,
                "labels": list(tier.label_keys),
                "domains": [
                    {"id": d.id, "nodes": d.nodes, "gpus": d.gpus, "freeGpus": d.free_gpus}
                    for d in tier.domains
                ],
            }
            for tier in detection.tiers
        ],
        "nodesWithoutTopology": list(detection.unlabelled),
    }


def render_text(detection: Detection) -> str:
    lines = [
        describe(detection),
        f"{detection.nodes} nodes, {detection.gpus} GPUs, {detection.free_gpus} free",
    ]
    for tier in detection.tiers:
        labels = ", ".join(tier.label_keys) or "(none)"
        lines.append(f"{tier.tier}: {count_of(len(tier.domains), 'domain')}, labels read: {labels}")
        for d in tier.domains:
            lines.append(f"  {d.id}: {d.nodes} nodes, {d.free_gpus}/{d.gpus} GPUs free")
    if detection.unlabelled:
        shown = ", ".join(detection.unlabelled[:MAX_LISTED])
        more = len(detection.unlabelled) - MAX_LISTED
        lines.append(
            f"nodes without topology labels ({len(detection.unlabelled)}): {shown}"
            + (f" and {more} more" if more > 0 else "")
        )
    return "\n".join(lines)
