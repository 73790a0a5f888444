"""``fabricfit run``: start the operator.

Watches TrainingTopologies (and the pods of their workloads) in all namespaces or the listed
ones, plus nodes; serves a liveness endpoint and Prometheus metrics (``--metrics-port``).
Standalone by default (one replica, Recreate);
``--peering NAME`` joins a kopf peering group so that only the highest-priority replica acts.
"""

from __future__ import annotations

import argparse
import logging
import os

from fabricfit.api.constants import FABRIC_PRESETS, LABEL_SCHEMES
from fabricfit.cli.common import EXIT_OK, Parser, UsageError
from fabricfit.fabric.profiles import DEFAULT_PROFILE


def configure(parser: Parser) -> None:
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument(
        "-A", "--all-namespaces", action="store_true", help="watch every namespace (default)"
    )
    scope.add_argument(
        "-n",
        "--namespace",
        action="append",
        default=[],
        metavar="NS",
        help="watch only NS (repeatable)",
    )
    peers = parser.add_mutually_exclusive_group()
    peers.add_argument("--standalone", action="store_true", help="no peering (default)")
    peers.add_argument("--peering", metavar="NAME", help="join the kopf peering group NAME")
    parser.add_argument("--priority", type=int, default=0, help="peering priority (highest acts)")
    parser.add_argument(
        "--liveness",
        default="http://0.0.0.0:8080/healthz",
        metavar="URL",
        help="liveness endpoint ('' to disable)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=9090,
        metavar="PORT",
        help="serve Prometheus metrics on PORT at /metrics (0 disables)",
    )
    parser.add_argument(
        "--fabric", default=DEFAULT_PROFILE, choices=FABRIC_PRESETS, help="default fabric preset"
    )
    parser.add_argument(
        "--label-scheme", default="auto", choices=LABEL_SCHEMES, help="default node label scheme"
    )
    parser.add_argument(
        "--resync-seconds", type=float, default=10.0, help="level-based re-evaluation period"
    )
    parser.add_argument(
        "--kubeconfig",
        default=None,
        help="kubeconfig path (default: $KUBECONFIG, ~/.kube/config, in-cluster)",
    )
    parser.add_argument("--verbose", action="store_true", help="debug logging")


def execute(args: argparse.Namespace) -> int:
    import kopf

    from fabricfit.handlers.registry import build_registry
    from fabricfit.reconcile.context import OperatorConfig

    if not 0 <= args.metrics_port <= 65535:
        raise UsageError("--metrics-port must be 0 (off) or a TCP port")
    if args.resync_seconds <= 0:
        raise UsageError("--resync-seconds must be positive")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    config = OperatorConfig(
        default_fabric=args.fabric,
        label_scheme=args.label_scheme,
        resync_seconds=args.resync_seconds,
        namespaces=tuple(args.namespace),
    )
    if args.kubeconfig:  # kopf's own login reads $KUBECONFIG
        os.environ["KUBECONFIG"] = args.kubeconfig
    registry = build_registry(config, kubeconfig=args.kubeconfig, metrics_port=args.metrics_port)
    kopf.run(
        registry=registry,
        clusterwide=not args.namespace,
        namespaces=args.namespace,
        standalone=args.peering is None,
        peering_name=args.peering,
        priority=args.priority,
        liveness_endpoint=args.liveness or None,
        memo=kopf.Memo(),
    )
    return EXIT_OK
