"""The DRA inputs of ``fabricfit plan`` and ``inspect``: ResourceSlice and ResourceClaim dumps.

``--resource-slices`` takes ``kubectl get resourceslices -o json|yaml`` (the GPUs that nodes
without ``nvidia.com/gpu`` allocatable publish through Dynamic Resource Allocation) and
``--resource-claims`` ``kubectl get resourceclaims -A -o json|yaml`` (the devices already
allocated). Claims without slices would have no GPUs to hold, so that is refused.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

from fabricfit.cli.common import UsageError
from fabricfit.cli.inputs import read_objects
from fabricfit.fabric.deviceask import DEVICE_CLASS_KIND
from fabricfit.fabric.objects import str_at
from fabricfit.fabric.podclaims import CLAIM_KIND, TEMPLATE_KIND


def add_dra_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--resource-slices",
        metavar="SLICES",
        help="kubectl get resourceslices -o json|yaml output: GPUs published through DRA",
    )
    parser.add_argument(
        "--resource-claims",
        metavar="CLAIMS",
        help="kubectl get resourceclaims -A -o json|yaml output: DRA devices allocated",
    )


def read_dra(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(slices, claims) from the flags; each file must hold only objects of its kind."""
    if args.resource_claims and not args.resource_slices:
        raise UsageError("--resource-claims needs --resource-slices (the devices they hold)")
    slices = (
        read_objects(args.resource_slices, "resource slices", kind="ResourceSlice")
        if args.resource_slices
        else []
    )
    claims = (
        read_objects(args.resource_claims, "resource claims", kind=CLAIM_KIND)
        if args.resource_claims
        else []
    )
    return slices, claims


def claim_objects(
    topology_objects: Iterable[Mapping[str, Any]], claims: Iterable[Mapping[str, Any]]
) -> dict[tuple[str, str], Mapping[str, Any]]:
    """ResourceClaimTemplates, ResourceClaims and DeviceClasses by (kind, name): those of the
    topology file first (the workload's own), then the claims of the dump."""
    found: dict[tuple[str, str], Mapping[str, Any]] = {}
    for obj in [*topology_objects, *claims]:
        kind, name = obj.get("kind"), str_at(obj, "metadata", "name")
        if kind in (TEMPLATE_KIND, CLAIM_KIND, DEVICE_CLASS_KIND) and name:
            found.setdefault((str(kind), name), obj)
    return found
