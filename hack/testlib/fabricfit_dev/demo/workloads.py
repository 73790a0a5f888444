"""What the demo submits: training jobs with their TrainingTopologies, and other tenants' pods.

Pure: specs in, manifests out. The tenants' layout is pseudo-random with a fixed seed, so every
run with the same options shows the same cluster.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

POOL_LABEL = "fabricfit.dev/pool"
POOL = "demo"
#: The GB200 NVL72 racks' node pool: the jobs of the main pool never land there.
NVL72_POOL = "demo-nvl72"
POOLS = (POOL, NVL72_POOL)
#: Share of the NVL72 racks' GPUs other tenants hold (their layout seeded like the rest).
NVL72_TENANT_SHARE = 0.3
#: Selects the nodes of every demo pool.
POOLS_SELECTOR = f"{POOL_LABEL} in ({','.join(POOLS)})"
GPUS_PER_NODE = 8
GPU = "nvidia.com/gpu"
TEAMS = ("vision", "speech", "search", "ads", "infer", "rl")


@dataclass(frozen=True)
class DemoJob:
    name: str
    kind: str  # a few words for the reader
    parallelism: dict[str, int]
    model: dict[str, int] = field(default_factory=dict)
    gpus_per_pod: int = GPUS_PER_NODE
    pool: str = POOL  # the node pool its pods are kept to (nodeSelector)
    fabric: str | None = None  # the fabric preset; None: the demo's FABRICFIT_DEMO_FABRIC
    # The tier Kueue TAS is asked to prefer for it (podset-preferred-topology).
    kueue_tier: str = "rail_group"

    @property
    def world_size(self) -> int:
        p = self.parallelism
        return p.get("tensor", 1) * p.get("pipeline", 1) * p.get("data", 1) * p.get("context", 1)

    @property
    def pods(self) -> int:
        return self.world_size // self.gpus_per_pod

    @property
    def shape(self) -> str:
        short = {"tensor": "TP", "pipeline": "PP", "data": "DP", "expert": "EP", "context": "CP"}
        return "·".join(f"{short[k]}{v}" for k, v in self.parallelism.items() if v > 1)


STANDARD = (
    DemoJob(
        "llama-70b",
        "dense pre-training",
        {"tensor": 8, "pipeline": 4, "data": 4},
        {"parameters": 70_000_000_000, "hiddenSize": 8192, "layers": 80, "sequenceLength": 4096,
         "microBatchSize": 1, "microBatches": 16, "bytesPerElement": 2, "zeroStage": 1},
    ),
    DemoJob(
        "mixtral-8x22b",
        "mixture of experts, expert parallel",
        {"tensor": 2, "pipeline": 4, "data": 8, "expert": 8},
        {"parameters": 141_000_000_000, "hiddenSize": 6144, "layers": 56, "sequenceLength": 4096,
         "microBatchSize": 1, "microBatches": 32, "bytesPerElement": 2, "experts": 8, "topK": 2,
         "zeroStage": 1},

        gpus_per_pod=4,
    ),
    DemoJob(
        "llama-8b-finetune",
        "fine-tune, ZeRO-3",
        {"tensor": 4, "data": 4},
        {"parameters": 8_000_000_000, "hiddenSize": 4096, "layers": 32, "sequenceLength": 8192,
         "microBatches": 4, "zeroStage": 3},
        gpus_per_pod=4,
    ),
)  # fmt: skip

SMALL = (
    DemoJob(
        "llama-13b",
        "dense pre-training",
        {"tensor": 8, "pipeline": 2, "data": 2},
        {"parameters": 13_000_000_000, "hiddenSize": 5120, "layers": 40, "sequenceLength": 4096,
         "microBatchSize": 1, "microBatches": 8, "bytesPerElement": 2, "zeroStage": 1},
    ),
    DemoJob(
        "mixtral-8x7b",
        "mixture of experts, expert parallel",
        {"tensor": 2, "data": 8, "expert": 4},
        {"parameters": 47_000_000_000, "hiddenSize": 4096, "layers": 32, "sequenceLength": 4096,
         "microBatchSize": 1, "microBatches": 8, "bytesPerElement": 2, "experts": 8, "topK": 2,
         "zeroStage": 1},

        gpus_per_pod=4,
    ),
)  # fmt: skip

# GB200 NVL72 (fabric gb200-nvl72): one pod per 4-GPU tray, as a ComputeDomain's channel wants.
# Tensor groups of 8 span two trays of a rack, the MoE's expert groups four: both need
# multi-node NVLink, so each job asks for a ComputeDomain.
GB200_STANDARD = (
    DemoJob(
        "llama-70b",
        "dense pre-training",
        {"tensor": 8, "pipeline": 4, "data": 2},
        STANDARD[0].model,
        gpus_per_pod=4,
    ),
    DemoJob(
        "mixtral-8x22b",
        "mixture of experts, expert parallel",
        {"tensor": 4, "pipeline": 2, "data": 8, "expert": 8},
        STANDARD[1].model,
        gpus_per_pod=4,
    ),
    DemoJob(
        "llama-8b-finetune", "fine-tune, ZeRO-3", {"tensor": 4, "data": 4}, STANDARD[2].model,
        gpus_per_pod=4,
    ),
)  # fmt: skip
GB200_SMALL = (
    DemoJob(
        "llama-13b", "dense pre-training", {"tensor": 8, "data": 2}, SMALL[0].model, gpus_per_pod=4
    ),
    DemoJob(
        "mixtral-8x7b",
        "mixture of experts, expert parallel",
        {"tensor": 2, "data": 8, "expert": 4},
        SMALL[1].model,
        gpus_per_pod=4,
    ),
)  # fmt: skip

# On the NVL72 racks: tensor groups of 8 span two trays, which only NVLink inside one rack joins;
# when other tenants leave an odd number of trays free in a rack, count-based packing splits a
# tensor group across racks (docs/tasks/demo.md).
NVL72_JOB = DemoJob(
    "llama-13b-nvl72",
    "dense pre-training on GB200 NVL72 racks",
    {"tensor": 8, "pipeline": 2, "data": 4},
    SMALL[0].model,
    gpus_per_pod=4,
    pool=NVL72_POOL,
    fabric="gb200-nvl72",
    kueue_tier="nvlink_domain",
)

JOB_SETS = {"standard": STANDARD, "small": SMALL}
GB200_JOB_SETS = {"standard": GB200_STANDARD, "small": GB200_SMALL}


def nodes_needed(jobs: Sequence[DemoJob], gpus_per_node: int = GPUS_PER_NODE) -> int:
    """Whole nodes' worth of GPUs the jobs take."""
    return -(-sum(job.world_size for job in jobs) // gpus_per_node)


def choose_jobs(
    job_set: str, free_nodes: int, gpus_per_node: int = GPUS_PER_NODE
) -> tuple[DemoJob, ...]:
    """The jobs to run: ``job_set``, or under ``auto`` the largest set that fits (the GB200
    sets on 4-GPU trays)."""
    sets = GB200_JOB_SETS if gpus_per_node == 4 else JOB_SETS
    if job_set != "auto":
        return sets[job_set]
    if free_nodes >= nodes_needed(sets["standard"], gpus_per_node):
        return sets["standard"]
    return sets["small"]


@dataclass(frozen=True)
class TenantPod:
    name: str
    node: str
    gpus: int


def plan_tenants(
    nodes: Sequence[str], share: float, seed: int, gpus_per_node: int = GPUS_PER_NODE
) -> list[TenantPod]:
    """Other tenants' pods taking about ``share`` of the GPUs: whole nodes (other teams'
    training jobs) and slices of nodes (inference, notebooks), at seeded random places."""
    rng = random.Random(seed)
    target = round(share * len(nodes) * gpus_per_node)
    order = rng.sample(list(nodes), len(nodes))
    pods: list[TenantPod] = []
    taken = 0
    for node in order:
        remaining = target - taken
        if remaining <= 0:
            break
        if remaining >= gpus_per_node and rng.random() < 0.55:
            sizes = [gpus_per_node]
        else:
            sizes = _slices(min(remaining, rng.randint(1, gpus_per_node - 2)), rng)
        for gpus in sizes:
            team = rng.choice(TEAMS)
            pods.append(TenantPod(f"{team}-{len(pods):03d}", node, gpus))
        taken += sum(sizes)
    return pods


def plan_nvl72_tenants(trays: Sequence[str], seed: int) -> list[TenantPod]:
    """Other tenants on the NVL72 racks: ``NVL72_TENANT_SHARE`` of their GPUs, whatever
    FABRICFIT_DEMO_TENANT_SHARE says of the main nodes (names kept apart from theirs)."""
    pods = plan_tenants(trays, NVL72_TENANT_SHARE, seed, gpus_per_node=4)
    return [TenantPod(f"{pod.name}-nvl72", pod.node, pod.gpus) for pod in pods]


def free_per_rack(trays: Sequence[str], tenants: Sequence[TenantPod], rack: int) -> list[int]:
    """Whole free trays of each rack (``rack`` consecutive trays)."""
    busy = {t.node for t in tenants}
    return [
        sum(1 for tray in trays[start : start + rack] if tray not in busy)
        for start in range(0, len(trays), rack)
    ]


def room_in_racks(free: Sequence[int], job: DemoJob) -> int:
    """Pods of ``job`` the racks hold with every tensor group inside one rack."""
    group = max(1, job.parallelism.get("tensor", 1) // job.gpus_per_pod)
    return sum(trays - trays % group for trays in free)


def _slices(gpus: int, rng: random.Random) -> list[int]:
    sizes: list[int] = []
    while gpus > 0:
        size = rng.choice([s for s in (1, 2, 4) if s <= gpus])
        sizes.append(size)
        gpus -= size
    return sizes


def free_whole_nodes(nodes: Sequence[str], tenants: Sequence[TenantPod]) -> int:
    busy = {t.node for t in tenants}
    return sum(1 for n in nodes if n not in busy)


def tenant_manifest(pod: TenantPod) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod.name, "labels": {"app": pod.name.split("-")[0]}},
        "spec": {
            "nodeName": pod.node,
            "containers": [{"name": "work", "image": "example.invalid/tenant:1",
                            "resources": {"limits": {GPU: str(pod.gpus)}}}],
        },
    }  # fmt: skip


def job_manifest(job: DemoJob) -> dict[str, Any]:
    """A suspended Indexed Job: fabricfit plans, pins and unsuspends it."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": job.name, "labels": {"app.kubernetes.io/part-of": "fabricfit-demo"}},
        "spec": {
            "suspend": True,
            "completionMode": "Indexed",
            "completions": job.pods,
            "parallelism": job.pods,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {POOL_LABEL: job.pool},
                    "containers": [{"name": "train", "image": "example.invalid/train:1",
                                    "resources": {"limits": {GPU: str(job.gpus_per_pod)}}}],
                }
            },
        },
    }  # fmt: skip


def topology_manifest(job: DemoJob, fabric: str, scheme: str) -> dict[str, Any]:
    return {
        "apiVersion": "fabricfit.dev/v1alpha1",
        "kind": "TrainingTopology",
        "metadata": {"name": job.name},
        "spec": {
            "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": job.name},
            "gpusPerPod": job.gpus_per_pod,
            "parallelism": dict(job.parallelism),
            "rankOrder": "tp-cp-ep-dp-pp",
            "model": dict(job.model),
            "fabric": job.fabric or fabric,
            "labelScheme": scheme,
            "placement": {"mode": "pinned", "tensor": "Required", "data": "Preferred"},
        },
    }
