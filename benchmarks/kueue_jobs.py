"""The jobs of the Kueue side-by-side benchmark and the Kueue TAS annotations a careful user
writes for them (``kueue_side_by_side.py`` places them; ``serving_kueue.py`` reuses the keys).

A careful user keeps a job at the tightest level it fits (the rail group, else the spine), slices
it so that a node's worth of partial-node pods shares a node (a TP·EP block of trays shares an
NVL72 rack), adds an outer rail-group slice per pipeline stage for a pipeline job larger than a
rail group, and falls back to ``preferred`` and fewer slices when Kueue says the set cannot fit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabricfit.fabric.profiles import get_profile
from fabricfit_dev.cluster import fakenodes, kueueobjects

NATIVE = fakenodes.NATIVE
SPINE, RAIL_GROUP, RACK = NATIVE + "spine", NATIVE + "rail-group", NATIVE + "rack"
HOSTNAME = kueueobjects.HOSTNAME
LEVELS = (SPINE, RAIL_GROUP, RACK, HOSTNAME)
SHORT = {SPINE: "spine", RAIL_GROUP: "rail-group", RACK: "rack", HOSTNAME: "hostname"}
REQUIRED = "kueue.x-k8s.io/podset-required-topology"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
SLICE_LEVEL = "kueue.x-k8s.io/podset-slice-required-topology"
SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
SLICE_LAYERS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"

DENSE_70B = {"parameters": 70_000_000_000, "hiddenSize": 8192, "layers": 80, "microBatches": 16}
MOE_47B = {"parameters": 47_000_000_000, "hiddenSize": 4096, "layers": 32, "experts": 64,
           "topK": 2}  # fmt: skip
SMALL_7B = {"parameters": 7_000_000_000, "hiddenSize": 4096, "layers": 32}


@dataclass(frozen=True)
class BenchJob:
    key: str  # also the Job's name
    label: str
    parallelism: Mapping[str, int]
    model: Mapping[str, int]
    gpus_per_pod: int = 8

    @property
    def world_size(self) -> int:
        p = self.parallelism  # expert parallelism is carved out of data parallelism
        return p.get("tensor", 1) * p.get("pipeline", 1) * p.get("data", 1) * p.get("context", 1)

    def on(self, gpus_per_node: int) -> BenchJob:
        """The job on nodes of ``gpus_per_node`` GPUs (4-GPU trays on NVL72)."""
        if self.gpus_per_pod <= gpus_per_node:
            return self
        return BenchJob(self.key, self.label, self.parallelism, self.model, gpus_per_node)

    @property
    def pods(self) -> int:
        return self.world_size // self.gpus_per_pod


JOBS = (
    BenchJob("dense", "dense TP8·PP4·DP4, whole-node pods",
             {"tensor": 8, "pipeline": 4, "data": 4}, DENSE_70B),
    BenchJob("moe", "MoE TP2·PP4·DP8·EP8, 4-GPU pods",
             {"tensor": 2, "pipeline": 4, "data": 8, "expert": 8}, MOE_47B, 4),
    BenchJob("zero3", "ZeRO-3 TP4·DP4 fine-tune, 4-GPU pods", {"tensor": 4, "data": 4},
             {"parameters": 8_000_000_000, "hiddenSize": 4096, "layers": 32, "zeroStage": 3}, 4),
    BenchJob("tp4dp16", "TP4·DP16, 4-GPU pods", {"tensor": 4, "data": 16}, SMALL_7B, 4),
    BenchJob("wide-dense", "TP8·PP2·DP16 (2 rail groups), whole-node pods",
             {"tensor": 8, "pipeline": 2, "data": 16}, DENSE_70B),
    BenchJob("wide-tp4", "TP4·DP48 (1.5 rail groups), 4-GPU pods",
             {"tensor": 4, "data": 48}, SMALL_7B, 4),
)  # fmt: skip


@dataclass(frozen=True)
class FabricShape:
    """The kwok pool of one fabric."""

    fabric: str
    gpus_per_node: int
    nodes_per_rail_group: int
    nodes_per_rack: int
    nvlink_domain_nodes: int
    spines: int = 2
    rail_groups_per_spine: int = 2

    @property
    def pool(self) -> str:
        return f"bench-{self.fabric}"

    @property
    def rail_group_gpus(self) -> int:
        return self.nodes_per_rail_group * self.gpus_per_node

    def fake_fabric(self) -> fakenodes.FakeFabric:
        return fakenodes.FakeFabric(
            spines=self.spines,
            rail_groups_per_spine=self.rail_groups_per_spine,
            nodes_per_rail_group=self.nodes_per_rail_group,
            nodes_per_rack=self.nodes_per_rack,
            gpus_per_node=self.gpus_per_node,
            nics_per_node=self.gpus_per_node,
            nvlink_domain_nodes=self.nvlink_domain_nodes,
            fabric=self.fabric,
            prefix=self.fabric.replace("h100-", "").replace("leaf-spine-", "ls"),
            pool=self.pool,
        )


def fabric_shape(fabric: str, rail_group_nodes: int) -> FabricShape:
    """``rail_group_nodes`` 8-GPU nodes per rail group, racks of 4; on NVL72 the same GPUs
    (rounded up to whole 18-tray racks) as 4-GPU trays."""
    profile = get_profile(fabric)
    gpus = profile.gpus_per_node
    domain = max(1, profile.gpus_per_nvlink_domain // gpus)
    if domain == 1:
        return FabricShape(fabric, gpus, rail_group_nodes, 4, 1)
    trays = rail_group_nodes * 8 // gpus
    racks = max(1, -(-trays // domain))
    return FabricShape(fabric, gpus, racks * domain, domain, domain)


def _layers(job: BenchJob, shape: FabricShape) -> tuple[str, list[tuple[str, int]]]:
    """The level a careful user keeps the job in and the slice layers (outer to inner)."""
    level = RAIL_GROUP if job.world_size <= shape.rail_group_gpus else SPINE
    pods, g = job.pods, job.gpus_per_pod
    layers: list[tuple[str, int]] = []
    if shape.nvlink_domain_nodes > 1:
        # NVL72: a TP (x EP) block of ranks spanning trays stays in one rack (NVLink domain).
        p = job.parallelism
        block = p.get("tensor", 1) * (p.get("expert", 1) if p.get("expert", 1) > 1 else 1)
        size = min(pods, max(1, block // g))
        if size > 1:
            layers.append((RACK, size))
    elif g < shape.gpus_per_node:
        # Partial-node pods: keep a node's worth of consecutive pods on one node (NVLink).
        layers.append((HOSTNAME, min(pods, shape.gpus_per_node // g)))
    stages = job.parallelism.get("pipeline", 1)
    if level == SPINE and stages > 1:
        # Data-parallel groups live inside a pipeline stage (rank order tp-cp-ep-dp-pp): one
        # stage per rail group keeps their all-reduce off the spine. Without pipeline stages
        # every data-parallel group spans the whole job, and no outer layer can help.
        outer, inner = pods // stages, layers[0][1] if layers else 1
        if outer % inner == 0:
            layers.insert(0, (RAIL_GROUP, outer))
    return level, layers


def _annotations(mode: str, level: str, layers: Sequence[tuple[str, int]]) -> dict[str, str]:
    out = {mode: level}
    if len(layers) == 1:
        out[SLICE_LEVEL], out[SLICE_SIZE] = layers[0][0], str(layers[0][1])
    elif layers:
        out[SLICE_LAYERS] = json.dumps([{"topology": t, "size": s} for t, s in layers])
    return out


def careful_user_annotations(job: BenchJob, shape: FabricShape) -> list[dict[str, str]]:
    """Kueue TAS annotation sets a careful user would try, tightest first (see module doc)."""
    level, layers = _layers(job, shape)
    ladder = [
        _annotations(REQUIRED, level, layers),
        _annotations(PREFERRED, level, layers),
        _annotations(PREFERRED, level, layers[-1:]),
        _annotations(PREFERRED, level, []),
    ]
    unique: list[dict[str, str]] = []
    for step in ladder:
        if step not in unique:
            unique.append(step)
    return unique


def describe(annotations: Mapping[str, str]) -> str:
    """``required rail-group, slices hostname×2`` for the table."""
    parts = []
    for key, word in ((REQUIRED, "required"), (PREFERRED, "preferred")):
        if key in annotations:
            parts.append(f"{word} {SHORT[annotations[key]]}")
    if SLICE_LEVEL in annotations:
        parts.append(f"slice {SHORT[annotations[SLICE_LEVEL]]}×{annotations[SLICE_SIZE]}")
    if SLICE_LAYERS in annotations:
        layers = json.loads(annotations[SLICE_LAYERS])
        parts.append("slices " + "/".join(f"{SHORT[x['topology']]}×{x['size']}" for x in layers))
    return ", ".join(parts)


def topology_spec(job: BenchJob, mode: str = "pinned", name: str = "") -> dict[str, Any]:
    """The TrainingTopology a user writes for the job (fabric: from the nodes' label) and its
    Job ``name`` (default: the job's key)."""
    return {
        "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": name or job.key},
        "gpusPerPod": job.gpus_per_pod,
        "parallelism": dict(job.parallelism),
        "rankOrder": "tp-cp-ep-dp-pp",
        "model": dict(job.model),
        "placement": {"mode": mode, "tensor": "Required", "data": "Preferred"},
    }
