"""Write the shipped simulation inputs: a 64-node DGX-H100 node dump and a generated job trace.

Run from the repository root (deterministic: seeded, same output every run)::

    .venv/bin/python benchmarks/traces/generate.py

Outputs, next to this script:

* ``nodes-h100-64.yaml`` — 64 eight-GPU nodes, 2 spines x 2 rail groups x 16 nodes, racks of 4,
  native ``topology.fabricfit.dev/*`` labels (the cluster of issue #16's measurement), written by
  the dev-cluster harness's ``fakenodes`` so it is the same node shape the e2e tests use;
* ``nodes-gb200-144.yaml`` — 144 four-GPU GB200 trays, 2 spines x 2 rail groups x 36 trays,
  NVL72 racks of 18 trays (one NVLink domain each), the cluster of the real-Kueue side by side;
* ``published-mix.yaml`` — 240 jobs whose sizes, durations and arrivals follow published GPU
  cluster figures, as far as they are published:

  - **Job sizes up to one node** follow the 1/2/4/8-GPU mix 70 % / 10 % / 15 % / 5 % that the
    Gavel (Narayanan et al., OSDI'20) and Synergy (Mohan et al., OSDI'22) cluster simulators
    draw from, derived from Microsoft's Philly trace (Jeon et al., "Analysis of Large-Scale
    Multi-Tenant GPU Clusters for DNN Training Workloads", ATC'19; the trace is
    github.com/msr-fiddle/philly-traces).
  - **Durations** follow the same simulators' Philly-derived law: 10^x minutes with x uniform in
    [1.5, 3] for 80 % of jobs and in [3, 4] for 20 %; here scaled by 1/20 so the replay covers
    days, not months, of jobs on 64 nodes (every placer sees the same scaled trace).
  - **Multi-node jobs**: Philly's and PAI's (Weng et al., "MLaaS in the Wild", NSDI'22) figures
    are for clusters of small jobs; Meta's RSC study (Kokolis et al., "Revisiting Reliability in
    Large-Scale Machine Learning Research Clusters", HPCA'25, arXiv:2410.21680) reports that
    small jobs are most of the jobs while large jobs hold much of the GPU time. The share of
    multi-node jobs (15 % of jobs, sizes 16/32/64/128 GPUs with weights 4/3/2/1) is OUR
    ASSUMPTION in that spirit, not a published figure; it is a parameter below.
  - **Shapes**: multi-node jobs are Megatron-style (TP8 in 8-GPU pods; a third of them TP4 in
    4-GPU pods, the partial-node case; a quarter of the 64/128-GPU ones MoE with EP8).
  - **Arrivals**: Poisson, at the rate that offers 120 % of the cluster's GPU-seconds while jobs
    arrive (a busy cluster: RSC reports its clusters run at high utilisation), so a queue forms.
* ``published-mix-nvl72.yaml`` — the same draws for the GB200 cluster: every job's size, shape,
  model and duration as in ``published-mix.yaml``, its pods at most one 4-GPU tray (an 8-GPU pod
  becomes two: TP8 then spans two trays of a rack's NVLink domain), arrivals at the same offered
  load of that cluster's 576 GPUs.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml

from fabricfit_dev.cluster.fakenodes import FakeFabric, node_manifests

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SEED = 16
JOBS = 240
SMALL_MIX = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))  # Philly via Gavel/Synergy
MULTI_NODE_SHARE = 0.15  # assumption (see module docstring)
MULTI_NODE_SIZES = ((16, 4), (32, 3), (64, 2), (128, 1))  # assumption: weights
DURATION_SCALE = 1 / 20
OFFERED_LOAD = 1.2
FABRIC = FakeFabric(spines=2, rail_groups_per_spine=2, nodes_per_rail_group=16, prefix="dgx")
NVL72 = FakeFabric(
    spines=2,
    rail_groups_per_spine=2,
    nodes_per_rail_group=36,
    nodes_per_rack=18,
    gpus_per_node=4,
    nics_per_node=4,
    nvlink_domain_nodes=18,
    fabric="gb200-nvl72",
    prefix="gb",
)

MODELS: dict[str, dict[str, int]] = {
    "small": {"parameters": 350_000_000, "hiddenSize": 1024, "layers": 24},
    "7b": {"parameters": 7_000_000_000, "hiddenSize": 4096, "layers": 32},
    "13b": {"parameters": 13_000_000_000, "hiddenSize": 5120, "layers": 40, "microBatches": 8},
    "70b": {"parameters": 70_000_000_000, "hiddenSize": 8192, "layers": 80, "microBatches": 16},
    "moe": {
        "parameters": 47_000_000_000,
        "hiddenSize": 4096,
        "layers": 32,
        "experts": 64,
        "topK": 2,
    },
}


def duration_seconds(rng: random.Random) -> float:
    low, high = (1.5, 3.0) if rng.random() < 0.8 else (3.0, 4.0)
    return round(60 * 10 ** rng.uniform(low, high) * DURATION_SCALE)


def small_job(rng: random.Random, gpus: int) -> dict[str, Any]:
    """One pod on one node: data-parallel inside the node (DDP over NVLink)."""
    model = "small" if gpus == 1 else rng.choice(("small", "7b"))
    return {
        "gpusPerPod": gpus,
        "parallelism": {"data": gpus},
        "model": {**MODELS[model], "zeroStage": 1},
    }


def multi_node_job(rng: random.Random, gpus: int) -> dict[str, Any]:
    if gpus >= 64 and rng.random() < 0.25:
        data = gpus // 8
        return {
            "gpusPerPod": 8,
            "parallelism": {"tensor": 8, "data": data, "expert": 8},
            "model": MODELS["moe"],
        }
    if rng.random() < 1 / 3:
        return {
            "gpusPerPod": 4,
            "parallelism": {"tensor": 4, "data": gpus // 4},
            "model": MODELS["7b"],
        }
    pipeline = {16: 1, 32: 2, 64: 2, 128: 4}[gpus]
    model = "13b" if gpus <= 32 else "70b"
    return {
        "gpusPerPod": 8,
        "parallelism": {"tensor": 8, "pipeline": pipeline, "data": gpus // 8 // pipeline},
        "model": MODELS[model],
    }


def published_mix(
    seed: int = SEED, jobs: int = JOBS, fabric: FakeFabric = FABRIC
) -> dict[str, Any]:
    """The trace drawn with ``seed`` for ``fabric``'s cluster: the draws do not depend on the
    cluster; its size sets the arrival rate and its node size caps every pod's GPUs."""
    rng = random.Random(seed)
    drafts = []
    for index in range(jobs):
        if rng.random() < MULTI_NODE_SHARE:
            sizes, weights = zip(*MULTI_NODE_SIZES, strict=True)
            gpus = rng.choices(sizes, weights)[0]
            body = multi_node_job(rng, gpus)
        else:
            sizes, weights = zip(*SMALL_MIX, strict=True)
            gpus = rng.choices(sizes, weights)[0]
            body = small_job(rng, gpus)
        duration = duration_seconds(rng)
        body["gpusPerPod"] = min(body["gpusPerPod"], fabric.gpus_per_node)
        drafts.append((index, gpus, duration, body))
    total_gpus = fabric.node_count * fabric.gpus_per_node
    offered = sum(g * d for _, g, d, _ in drafts) / jobs  # GPU-seconds per job
    rate = OFFERED_LOAD * total_gpus / offered  # jobs per second
    now, out = 0.0, []
    for index, gpus, duration, body in drafts:
        out.append(
            {
                "name": f"job-{index:03d}-{gpus}g",
                "arrival": round(now),
                "duration": duration,
                **body,
            }
        )
        now += rng.expovariate(rate)
    return {"jobs": out}


HEADER = (
    "# Generated by benchmarks/traces/generate.py (seed {seed}); do not edit. Job sizes,\n"
    "# durations and arrivals: see that script's docstring for the published figures and\n"
    "# which parts are assumptions.\n"
)


def node_list(fabric: FakeFabric) -> dict[str, Any]:
    items = node_manifests(fabric)
    for node in items:  # as kubectl shows a node kwok (or a kubelet) has made Ready
        node["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return {"apiVersion": "v1", "kind": "List", "items": items}


NODES_HEADER = (
    "# Generated by benchmarks/traces/generate.py: {what},\n"
    "# native labels (fabricfit_dev.cluster.fakenodes).\n"
)


def main() -> int:
    h100 = "64 DGX-H100 nodes, 2 spines x 2 rail groups x 16, racks of 4"
    gb200 = "144 GB200 trays of 4 GPUs, 2 spines x 2 rail groups x 36, NVL72 racks of 18 trays"
    outputs = {
        "nodes-h100-64.yaml": NODES_HEADER.format(what=h100)
        + yaml.safe_dump(node_list(FABRIC), sort_keys=False),
        "nodes-gb200-144.yaml": NODES_HEADER.format(what=gb200)
        + yaml.safe_dump(node_list(NVL72), sort_keys=False),
        "published-mix.yaml": HEADER.format(seed=SEED)
        + yaml.safe_dump(published_mix(), sort_keys=False),
        "published-mix-nvl72.yaml": HEADER.format(seed=SEED)
        + yaml.safe_dump(published_mix(fabric=NVL72), sort_keys=False),
    }
    for name, text in outputs.items():
        (HERE / name).write_text(text)
    print("wrote " + ", ".join(str(HERE / name) for name in outputs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
