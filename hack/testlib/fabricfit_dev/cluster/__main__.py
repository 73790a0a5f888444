"""Command line of the local control plane (``python -m fabricfit_dev.cluster VERB``).

Normally reached through ``hack/cluster``. Errors are one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import NoReturn

from fabricfit_dev.cluster import binaries, controllers, controlplane, fakenodes, install
from fabricfit_dev.cluster.processes import ClusterError
from fabricfit_dev.kube import Clients
from fabricfit_dev.waiting import WaitTimeoutError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"hack/cluster: {message}", file=sys.stderr)
        raise SystemExit(2)


def say(message: str) -> None:
    print(f"[cluster] {message}", file=sys.stderr, flush=True)


def cmd_up(args: argparse.Namespace) -> int:
    if args.check_args:
        return 0
    built = binaries.require()
    binaries.require_controllers(args.with_)
    state = controlplane.up(built, say, apiserver_port=args.apiserver_port)
    install.start_controllers(state, args.with_, built, say)
    say(f"logs in {state.directory}/logs; stop with: hack/cluster down")
    print(f"KUBECONFIG={state.kubeconfig}")
    return 0


def cmd_down(_args: argparse.Namespace) -> int:
    if not controlplane.down(say):
        say("no cluster was running")
    return 0


def cmd_status(_args: argparse.Namespace) -> int:
    state = controlplane.State.load(controlplane.state_dir())
    if state is None:
        print("no cluster is running")
        return 1
    health = controlplane.component_health(state)
    age = time.time() - state.started_at
    print(f"cluster {state.directory} (kubernetes {state.kubernetes_version}, up {age:.0f} s)")
    versions = {c.name: c.version for c in state.controllers}
    for proc in state.processes:
        alive, ok = health[proc.name]
        status = "healthy" if ok else ("running, unhealthy" if alive else "not running")
        version = f" ({versions[proc.name]})" if proc.name in versions else ""
        print(f"  {proc.name:<24} pid {proc.pid:<8} {status}{version}")
    for name in sorted(set(versions) - set(health)):
        print(f"  {name:<24} {'-':<12} not started ({versions[name]})")
    for proc in state.attached:
        running = controlplane.attached_alive(state)[proc.name]
        print(f"  {proc.name:<24} pid {proc.pid:<8} {'running' if running else 'not running'}")
    print(f"KUBECONFIG={state.kubeconfig}")
    return 0 if controlplane.healthy(state) else 1


def cmd_nodes(args: argparse.Namespace) -> int:
    state = controlplane.require_state()
    fabric = fakenodes.FakeFabric(
        spines=args.spines,
        rail_groups_per_spine=args.rail_groups,
        nodes_per_rail_group=args.nodes,
        nodes_per_rack=args.rack_size,
        gpus_per_node=args.gpus,
        nics_per_node=args.nics,
        nvlink_domain_nodes=args.nvlink_domain_nodes,
        scheme=args.scheme,
        fabric=args.fabric,
        prefix=args.prefix,
    )
    core = Clients.connect(state.kubeconfig).core
    names = fakenodes.create_nodes(core, fakenodes.node_manifests(fabric))
    fakenodes.wait_ready(core, names)
    say(
        f"{len(names)} fake GPU nodes Ready "
        f"({fabric.gpus_per_node} GPUs each, scheme {fabric.scheme})"
    )
    return 0


def _components(value: str) -> list[str]:
    try:
        return controllers.parse_with(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err


def build_parser() -> _Parser:
    parser = _Parser(
        prog="hack/cluster", description="Local Kubernetes control plane for fabricfit."
    )
    sub = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    up = sub.add_parser(
        "up", help="start etcd, kube-apiserver, controller-manager, scheduler and kwok"
    )
    up.add_argument(
        "--apiserver-port",
        type=int,
        default=None,
        help="port for kube-apiserver (default: a free one)",
    )
    up.add_argument(
        "--with",
        dest="with_",
        type=_components,
        default=[],
        metavar="kueue,jobset,lws,trainer",
        help="also run these controllers (any subset), built by: hack/cluster build --with ...",
    )
    up.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)
    sub.add_parser(
        "down",
        help="stop exactly the processes `up` (and the demo) started and remove their state",
    )
    sub.add_parser("status", help="report each component")
    nodes = sub.add_parser("nodes", help="create Ready fake GPU nodes")
    nodes.add_argument("--spines", type=int, default=1)
    nodes.add_argument("--rail-groups", type=int, default=2, help="rail groups per spine")
    nodes.add_argument("--nodes", type=int, default=8, help="nodes per rail group")
    nodes.add_argument("--rack-size", type=int, default=4, help="nodes per rack")
    nodes.add_argument("--gpus", type=int, default=8, help="GPUs per node")
    nodes.add_argument("--nics", type=int, default=8, help="NICs (rails) per node")
    nodes.add_argument("--nvlink-domain-nodes", type=int, default=1, help="nodes per NVLink domain")
    nodes.add_argument("--scheme", default="native", choices=fakenodes.SCHEMES)
    nodes.add_argument("--fabric", default="dgx-h100")
    nodes.add_argument("--prefix", default="gpu")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handlers = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "nodes": cmd_nodes}
    try:
        return handlers[args.verb](args)
    except (ClusterError, ValueError, WaitTimeoutError) as err:
        print(f"hack/cluster {args.verb}: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"hack/cluster {args.verb}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
