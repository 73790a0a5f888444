"""``fabricfit release``: let go of everything fabricfit holds, for uninstall or a dead operator.

fabricfit puts a finalizer on every TrainingTopology and a scheduling gate on every pod it pins.
Without a running operator neither goes away: deleting a TrainingTopology hangs and gated pods
never schedule. ``release`` removes both (TrainingTopologies keep their status; pods are left to
kube-scheduler wherever their own constraints allow) and prints what it released. The chart
runs it as a post-delete hook; people run it when the operator is gone for good.

Each removal is one JSON Patch guarded by a ``test`` of the entry it removes, so a concurrent
change fails that patch instead of removing somebody else's finalizer or gate. An operator that
is still stopping may put a finalizer back: the command looks again after ``--settle-seconds``
and repeats until a pass finds nothing (at most ``MAX_PASSES`` passes).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabricfit.api.constants import FINALIZER
from fabricfit.cli.common import EXIT_OK, Parser, UsageError, one_line
from fabricfit.cli.output import add_output_arguments, emit, output_format

MAX_PASSES = 5
EXIT_REFUSED = 1  # the API server refused, or could not be reached (a kubeconfig problem is 2)


@dataclass
class Released:
    """What was let go, as ``namespace/name``."""

    topologies: list[str] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)


def configure(parser: Parser) -> None:
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument(
        "-A", "--all", action="store_true", help="release in every namespace (uninstall)"
    )
    scope.add_argument(
        "-n", "--namespace", action="append", default=[], metavar="NS", help="only NS (repeatable)"
    )
    parser.add_argument("--dry-run", action="store_true", help="print what would be released")
    add_output_arguments(parser)
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=2.0,
        metavar="S",
        help="wait S seconds, then look again (an operator still stopping may re-add)",
    )
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig path (default: usual)")


def finalizer_patch(obj: Mapping[str, Any], finalizer: str = FINALIZER) -> list[dict[str, Any]]:
    """JSON Patch removing ``finalizer`` (guarded by a test of its index); [] when absent."""
    finalizers = (obj.get("metadata") or {}).get("finalizers") or []
    if finalizer not in finalizers:
        return []
    path = f"/metadata/finalizers/{finalizers.index(finalizer)}"
    return [{"op": "test", "path": path, "value": finalizer}, {"op": "remove", "path": path}]


def name_of(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def execute(args: argparse.Namespace) -> int:
    from fabricfit.cli.kubeconfig import credentials
    from fabricfit.kube.rest import ApiError

    if args.settle_seconds < 0:
        raise UsageError("--settle-seconds must not be negative")
    namespaces: Sequence[str | None] = [None] if args.all else list(args.namespace)
    found = credentials(args.kubeconfig)  # UsageError (exit 2) for any kubeconfig problem
    try:
        released = asyncio.run(_release_all(found, args, namespaces))
    except ApiError as err:  # the cluster said no, or could not be reached
        print(
            one_line(f"fabricfit release: {describe_api_error(err, found.host)}"), file=sys.stderr
        )
        return EXIT_REFUSED
    _report(released, dry_run=args.dry_run, fmt=output_format(args))
    return EXIT_OK


def describe_api_error(err: Any, host: str) -> str:
    """What went wrong with the API server, in words (no Python exception names)."""
    if err.status:
        return f"the API server {host} refused: {err.status} {err.reason}: {err.message}"
    cause = err.__cause__
    verify = getattr(getattr(cause, "certificate_error", None), "verify_message", None)
    if verify:
        return f"the API server {host} is not trusted: certificate verify failed: {verify}"
    os_error = getattr(cause, "os_error", None)
    reason = getattr(os_error, "strerror", None) or "no answer"
    return f"cannot reach the API server {host}: {reason}"


async def _release_all(
    found: Any, args: argparse.Namespace, namespaces: Sequence[str | None]
) -> Released:
    from fabricfit.kube.rest import Rest

    rest = Rest(found)
    try:
        return await release_everything(
            rest, namespaces, dry_run=args.dry_run, settle_seconds=args.settle_seconds
        )
    finally:
        await rest.close()


async def release_everything(
    rest: Any, namespaces: Sequence[str | None], *, dry_run: bool, settle_seconds: float
) -> Released:
    """Pass after pass until one finds nothing to release (or ``MAX_PASSES``)."""
    released = Released()
    for _ in range(MAX_PASSES):
        found = await _release_once(rest, namespaces, dry_run=dry_run)
        released.topologies += found.topologies
        released.pods += found.pods
        if dry_run or not (found.topologies or found.pods):
            break
        await asyncio.sleep(settle_seconds)
    return released


async def _release_once(rest: Any, namespaces: Sequence[str | None], *, dry_run: bool) -> Released:
    from fabricfit.kube.pods import list_pods, patch_pod
    from fabricfit.kube.topologies import list_topologies, patch_topology
    from fabricfit.render.pods import build_ungate_patch

    found = Released()
    for namespace in namespaces:
        for tt in await list_topologies(rest, namespace):
            patch = finalizer_patch(tt)
            if patch and await _apply(patch_topology, rest, tt, patch, dry_run=dry_run):
                found.topologies.append(name_of(tt))
        for pod in await list_pods(rest, namespace):
            patch = build_ungate_patch(pod)
            if patch and await _apply(patch_pod, rest, pod, patch, dry_run=dry_run):
                found.pods.append(name_of(pod))
    return found


Patcher = Callable[[Any, str, str, list[dict[str, Any]]], Awaitable[object]]


async def _apply(
    patcher: Patcher,
    rest: Any,
    obj: Mapping[str, Any],
    patch: list[dict[str, Any]],
    *,
    dry_run: bool,
) -> bool:
    """Patch ``obj``; False when it changed or vanished underneath (the next pass looks again)."""
    from fabricfit.kube.pods import RACES
    from fabricfit.kube.rest import ApiError

    if dry_run:
        return True
    meta = obj.get("metadata") or {}
    try:
        await patcher(rest, str(meta.get("namespace") or ""), str(meta.get("name")), patch)
    except ApiError as err:
        if err.status not in RACES:
            raise
        return False
    return True


def _report(released: Released, *, dry_run: bool, fmt: str | None) -> None:
    if fmt is not None:
        body = {
            "dryRun": dry_run,
            "topologies": list(dict.fromkeys(released.topologies)),
            "pods": list(dict.fromkeys(released.pods)),
        }
        emit(body, fmt)
        return
    verb = "would release" if dry_run else "released"
    for name in released.topologies:
        print(f"{verb} TrainingTopology {name}: finalizer {FINALIZER} removed")
    for name in released.pods:
        print(f"{verb} Pod {name}: scheduling gate removed")
    print(f"{verb} {len(released.topologies)} TrainingTopologies and {len(released.pods)} pods")
