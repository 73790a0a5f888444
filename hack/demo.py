"""`make demo`: a simulated GPU cluster on the local control plane.

Builds (or reuses) the control-plane binaries, starts the local control plane, creates fake
DGX-H100 nodes labelled with the chosen scheme, and shows them with their topology labels.
Options come from environment variables:

  FABRICFIT_DEMO_SPINES (1)  FABRICFIT_DEMO_RAIL_GROUPS (2, per spine)
  FABRICFIT_DEMO_NODES (8, per rail group)  FABRICFIT_DEMO_SCHEME (native)
  FABRICFIT_DEMO_FABRIC (dgx-h100)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hack"))

from devcluster import binaries, cluster, fakenodes  # noqa: E402
from devcluster.processes import ClusterError  # noqa: E402


def step(message: str) -> None:
    print(f"==> {message}", flush=True)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, str(default))
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return int(raw)


def fabric_from_env() -> fakenodes.FakeFabric:
    return fakenodes.FakeFabric(
        spines=env_int("FABRICFIT_DEMO_SPINES", 1),
        rail_groups_per_spine=env_int("FABRICFIT_DEMO_RAIL_GROUPS", 2),
        nodes_per_rail_group=env_int("FABRICFIT_DEMO_NODES", 8),
        scheme=os.environ.get("FABRICFIT_DEMO_SCHEME", "native"),
        fabric=os.environ.get("FABRICFIT_DEMO_FABRIC", "dgx-h100"),
        prefix="dgx",
    )


def main() -> int:
    from kubernetes import client, config

    try:
        fabric = fabric_from_env()
        step("control-plane binaries")
        subprocess.run([str(ROOT / "hack" / "cluster"), "build"], check=True)
        step("starting the local control plane")
        state = cluster.up(binaries.require(), lambda m: print(f"    {m}", flush=True))
    except (ClusterError, ValueError, subprocess.CalledProcessError) as err:
        print(f"demo: {err}", file=sys.stderr)
        return 1
    step(f"creating {fabric.node_count} fake GPU nodes ({fabric.scheme} labels)")
    core = client.CoreV1Api(config.new_client_from_config(str(state.kubeconfig)))
    names = fakenodes.create_nodes(core, fakenodes.node_manifests(fabric))
    fakenodes.wait_ready(core, names)
    step("nodes and their topology labels")
    kubectl = [str(binaries.locate().kubectl), f"--kubeconfig={state.kubeconfig}"]
    shown = ("spine", "rail-group", "rack", "rails", "fabric")
    label_columns = ",".join(f"topology.fabricfit.dev/{key}" for key in shown)
    selector = "fabricfit.dev/fake=true"
    subprocess.run([*kubectl, "get", "nodes", "-l", selector, "-L", label_columns], check=True)
    print()
    print(f"Look around:  KUBECONFIG={state.kubeconfig} {kubectl[0]} get nodes --show-labels")
    print("Stop it:      make demo-down   (or hack/cluster down)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
