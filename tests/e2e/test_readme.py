"""The README's walk-through on a real control plane: its `kubectl label` commands label bare
GPU nodes, `fabricfit inspect` then finds the tiers, and its first job is placed.

The nodes are the README's own (h100-01 … h100-08, kwok, 8 GPUs each, no topology label until
the README's commands run). The only change to the README's objects is a nodeSelector fencing
the Job onto those nodes, so that other tests' nodes in the same cluster stay out of its plan.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    RAIL_GROUP,
    condition,
    planned,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from unit.doclinks import ROOT, code_blocks, section

README = (ROOT / "README.md").read_text(encoding="utf-8")
POOL = "readme"


def label_commands() -> list[list[str]]:
    blocks = code_blocks(section(README, "Label your nodes"), "sh")
    lines = [line for block in blocks for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("kubectl label node ")]


def bare_nodes(names: list[str]) -> list[dict[str, Any]]:
    """kwok GPU nodes called ``names`` carrying no topology label (only the test's pool)."""
    fabric = fakenodes.FakeFabric(prefix=POOL, pool=POOL, nodes_per_rail_group=len(names),
                                  rail_groups_per_spine=1)  # fmt: skip
    manifests = fakenodes.node_manifests(fabric)
    for manifest, name in zip(manifests, names, strict=True):
        meta = manifest["metadata"]
        meta["name"] = name
        manifest["spec"]["providerID"] = f"kwok://{name}"
        meta["labels"] = {
            k: v for k, v in meta["labels"].items() if not k.startswith("topology.fabricfit.dev/")
        }
        meta["labels"]["kubernetes.io/hostname"] = name
    return manifests


def inspect(kubectl: list[str]) -> dict[str, Any]:
    nodes = subprocess.run([*kubectl, "get", "nodes", "-l", f"{POOL_LABEL}={POOL}", "-o", "json"],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "fabricfit", "inspect", "--nodes", "-", "--json"],
        input=nodes, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(result.stdout))


def test_readme_labels_then_first_job_is_placed_in_one_rail_group(
    operator: OperatorProcess,
    core: Any,
    custom: Any,
    kubectl: list[str],
    namespace: str,
    tmp_path: Path,
) -> None:
    commands = label_commands()
    names = sorted({a for argv in commands for a in argv[3:] if "=" not in a})
    assert names == [f"h100-0{i}" for i in range(1, 9)], names
    fakenodes.wait_ready(core, fakenodes.create_nodes(core, bare_nodes(names)))
    try:
        assert inspect(kubectl)["topologyDetected"] is False
        for argv in commands:
            subprocess.run([*kubectl, *argv[1:]], check=True, capture_output=True)
        tiers = {t["tier"]: t for t in inspect(kubectl)["tiers"]}
        rail_groups = [d["id"] for d in tiers["rail_group"]["domains"]]
        assert [re.sub(r".*/", "", g) for g in rail_groups] == ["su-1", "su-2"], rail_groups

        (block,) = code_blocks(section(README, "Your first job"), "yaml")
        topology, job = yaml.safe_load_all(block)
        job["spec"]["template"]["spec"]["nodeSelector"] = {POOL_LABEL: POOL}
        manifest = tmp_path / "first-job.yaml"
        manifest.write_text(yaml.safe_dump_all([topology, job]), encoding="utf-8")
        subprocess.run([*kubectl, "apply", "-n", namespace, "-f", str(manifest)], check=True,
                       capture_output=True)  # fmt: skip

        name = topology["metadata"]["name"]
        tt = wait_condition(custom, namespace, name, "Placed", "True")
        plan = planned(tt)
        pods = wait_bound(core, namespace, job["metadata"]["name"], 4)
        assert {i: p.spec.node_name for i, p in pods.items()} == dict(enumerate(plan))
        labels = {n.metadata.name: n.metadata.labels for n in core.list_node().items}
        assert len({labels[node][RAIL_GROUP] for node in plan}) == 1, plan
        assert (condition(tt, "TopologyDetected") or {}).get("status") == "True"
        assert tt["status"]["efficiency"] > 0.99
    finally:
        for node in names:
            core.delete_node(node)
