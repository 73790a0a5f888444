"""``fabricfit cost``: predict one collective on a fabric preset (offline, no cluster needed).

The ranks are the first G GPUs of each of N nodes, nodes packed into NVLink domains in order
(a gb200-nvl72 node is a 4-GPU compute tray, 18 per NVL72 domain; a TPU node is a host of 4
chips in one slice). GPU j of a node uses rail ``j·K/gpus_per_node``; nodes form rail groups of
the profile's ``nodes_per_rail_group`` (256 GPUs rounded up to whole NVLink domains, a DGX
SuperPOD scalable unit) under one spine. The output ends with how right the model
was on the published rows of the prediction's regime, rows of the preset's own hardware family
only, and at scale what the held-out rows say (``cli.regimes``). The ranks' shape is computed
from the tiers (:func:`group_shape`), never a slot per rank, so the largest question (65,536
nodes of 64 GPUs) costs what a small one does. Imports no kopf and no Kubernetes client.
"""

from __future__ import annotations

import argparse
import dataclasses

from fabricfit.calibrate.published import RegimeReport
from fabricfit.cli.common import EXIT_OK, Parser, UsageError, profile_name
from fabricfit.cli.fabrics import read_profile_file
from fabricfit.cli.output import add_output_arguments, emit, output_format
from fabricfit.cli.regimes import measured_accuracy
from fabricfit.cost import Collective, CollectiveEstimate, CostError, GroupShape, estimate_shape
from fabricfit.fabric.names import unknown_name
from fabricfit.fabric.objects import shorten
from fabricfit.fabric.profiles import DEFAULT_PROFILE, FabricProfile, ProfileError, get_profile
from fabricfit.fabric.quantity import parse_size_bytes
from fabricfit.fabric.topology import GpuSlot

MAX_NODES = 65_536
MAX_SIZE_BYTES = 2**50


def configure(parser: Parser) -> None:
    fabric = parser.add_mutually_exclusive_group(required=True)
    fabric.add_argument(
        "--fabric",
        type=profile_name,
        metavar="PRESET",
        help=f"fabric preset (e.g. {DEFAULT_PROFILE})",
    )
    fabric.add_argument(
        "--fabric-file",
        metavar="PROFILE.yaml",
        help="a custom fabric profile (the preset schema; e.g. from fabricfit calibrate)",
    )
    parser.add_argument(
        "--collective", required=True, metavar="C", help=", ".join(c.value for c in Collective)
    )
    parser.add_argument(
        "--size",
        required=True,
        metavar="SIZE",
        help="bytes per rank, e.g. 4096, 64KiB, 1GiB, 2GB, 1Gi, 512Mi, 1e9",
    )
    parser.add_argument(
        "--nodes",
        required=True,
        type=int,
        metavar="N",
        help="nodes (GB200: 4-GPU trays; TPU: hosts)",
    )
    parser.add_argument(
        "--gpus-per-node", required=True, type=int, metavar="G", help="ranks on each node"
    )
    parser.add_argument(
        "--nics-per-node", type=int, metavar="K", help="override the preset's NICs per node"
    )
    parser.add_argument("--algorithm", default="auto", choices=("ring", "tree", "nvls", "auto"))
    add_output_arguments(parser)


def parse_size(text: str) -> int:
    """``SIZE`` in bytes: a number with B, KB, MB, GB, KiB, MiB, GiB (any case) or a Kubernetes
    quantity (``1Gi``, ``512Mi``, ``1G``, ``1e9``), at most 1 PiB."""
    size, problem = parse_size_bytes(text, MAX_SIZE_BYTES)
    if size is None:
        raise UsageError(f"invalid --size {shorten(text)}: {problem}")
    return size


def _profile(args: argparse.Namespace) -> FabricProfile:
    if args.fabric_file is not None:
        profile = read_profile_file(args.fabric_file)
    else:
        try:
            profile = get_profile(args.fabric)
        except ProfileError as err:
            raise UsageError(str(err)) from None
    if args.nics_per_node is not None:
        if not 1 <= args.nics_per_node <= 64:
            raise UsageError(f"--nics-per-node must be between 1 and 64, got {args.nics_per_node}")
        profile = dataclasses.replace(profile, nics_per_node=args.nics_per_node)
    return profile


def _check(args: argparse.Namespace, profile: FabricProfile) -> Collective:
    try:
        collective = Collective(args.collective)
    except ValueError:
        names = [c.value for c in Collective]
        raise UsageError(unknown_name("--collective", args.collective, names)) from None
    if not 1 <= args.nodes <= MAX_NODES:
        raise UsageError(f"--nodes must be between 1 and {MAX_NODES}, got {args.nodes}")
    if not 1 <= args.gpus_per_node <= profile.gpus_per_node:
        raise UsageError(
            f"--gpus-per-node must be between 1 and {profile.gpus_per_node} on {profile.name}, "
            f"got {args.gpus_per_node}"
        )
    if args.algorithm == "nvls" and not profile.nvls:
        raise UsageError(
            f"--algorithm nvls needs NVSwitch in-switch reduction; {profile.name} has none"
        )
    if args.algorithm == "nvls" and not profile.nvls_enabled:
        raise UsageError(
            f"--algorithm nvls: {profile.name}'s NCCL set-up disables NVLS (nvls_enabled: false)"
        )
    if args.algorithm in ("tree", "nvls") and profile.is_torus:
        raise UsageError(
            f"--algorithm {args.algorithm} does not exist on a TPU torus ({profile.name})"
        )
    return collective


def build_group(profile: FabricProfile, nodes: int, gpus: int) -> list[GpuSlot]:
    """The first ``gpus`` GPUs of ``nodes`` nodes, packed into NVLink domains in order (one
    slot per rank: what :func:`group_shape` summarises without building)."""
    per_domain_nodes = profile.nodes_per_nvlink_domain
    per_group_nodes = profile.nodes_per_rail_group
    slots = []
    for n in range(nodes):
        for j in range(gpus):
            slots.append(
                GpuSlot(
                    node=f"node-{n}",
                    gpu=j,
                    rail=_rail(profile, j),
                    nvlink_domain=f"domain-{n // per_domain_nodes}",
                    rail_group=f"su-{n // per_group_nodes}",
                    spine="spine-0",
                )
            )
    return slots


def group_shape(profile: FabricProfile, nodes: int, gpus: int) -> GroupShape:
    """The :class:`GroupShape` of :func:`build_group`'s ranks, from the tiers alone: O(1) in
    the ranks (65,536 nodes of 64 GPUs were 4 million slots, 27 s and 1.9 GB to summarise)."""
    per_domain_nodes = profile.nodes_per_nvlink_domain
    domains = -(-nodes // per_domain_nodes)
    last_nodes = nodes - (domains - 1) * per_domain_nodes
    fullest_nodes = min(nodes, per_domain_nodes)
    rails = len({_rail(profile, j) for j in range(gpus)})
    if nodes == 1:
        return GroupShape(gpus, 1, 1, gpus, gpus, rails, gpus, 1, False, 1, True)
    return GroupShape(
        ranks=nodes * gpus,
        nodes=nodes,
        domains=domains,
        max_per_domain=fullest_nodes * gpus,
        min_per_domain=last_nodes * gpus,
        min_nics_per_domain=last_nodes * rails,
        max_per_node=gpus,
        rail_groups=-(-nodes // profile.nodes_per_rail_group),
        ungrouped=False,
        spines=1,
        rail_aligned=True,
        window_aligned=True,  # every node's ranks are its first GPUs: one window, at GPU 0
        one_rail=rails == 1,
    )


def _rail(profile: FabricProfile, gpu: int) -> int:
    return gpu * profile.nics_per_node // profile.gpus_per_node


def _render(
    profile: FabricProfile,
    estimate: CollectiveEstimate,
    args: argparse.Namespace,
    found: RegimeReport,
) -> str:
    rows = [
        ("fabric", profile.name),
        ("collective", f"{estimate.collective.value}, {estimate.size_bytes:,} bytes per rank"),
        ("ranks", f"{estimate.ranks} ({args.nodes} nodes x {args.gpus_per_node})"),
        ("algorithm", f"{estimate.algorithm} / {estimate.protocol}"),
        ("time", _seconds(estimate.seconds)),
        ("algbw", f"{estimate.algbw_gb_per_s:,.2f} GB/s"),
        ("busbw", f"{estimate.busbw_gb_per_s:,.2f} GB/s"),
        ("bottleneck", estimate.bottleneck),
        ("measured", found.describe()),
    ]
    return "\n".join(f"{key:<11} {value}" for key, value in rows)


def _seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.2f} us"


def execute(args: argparse.Namespace) -> int:
    profile = _profile(args)
    collective = _check(args, profile)
    size = parse_size(args.size)
    shape = group_shape(profile, args.nodes, args.gpus_per_node)
    try:
        estimate = estimate_shape(collective, size, shape, profile, algorithm=args.algorithm)
    except CostError as err:
        raise UsageError(str(err)) from None
    # judged on the preset's own hardware family (with --nics-per-node: the preset's rows)
    judged_on = get_profile(args.fabric) if args.fabric is not None else profile
    found = measured_accuracy(collective, size, args.nodes, judged_on)
    if fmt := output_format(args):
        body = {
            "fabric": profile.name,
            "collective": estimate.collective.value,
            "size_bytes": estimate.size_bytes,
            "ranks": estimate.ranks,
            "nodes": args.nodes,
            "gpus_per_node": args.gpus_per_node,
            "algorithm": estimate.algorithm,
            "protocol": estimate.protocol,
            "seconds": estimate.seconds,
            "algbw_gb_per_s": estimate.algbw_gb_per_s,
            "busbw_gb_per_s": estimate.busbw_gb_per_s,
            "bottleneck": estimate.bottleneck,
            "accuracy": found.record(),
        }
        emit(body, fmt, sort_keys=True)
    else:
        print(_render(profile, estimate, args, found))
    return EXIT_OK
