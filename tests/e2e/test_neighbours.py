"""fabricfit steers a job away from the spine another job's traffic saturates.

On a kwok pool of two spines (three rail groups of two DGX-H100 nodes each) priced as the 2:1
leaf/spine preset, a communication-heavy job (a 20B model's gradients over few tokens per step,
TP8 × DP3 in whole-node pods) is planned by fabricfit and its pods bound: three nodes cannot sit
in one rail group, so its data-parallel rings climb the leaf uplinks of two rail groups of one
spine (A). A second job of the same shape ties alone on A's free nodes or on B — the planner
alone takes A, the tightest fit (checked in the test with the same planner on the cluster read
back) — and the operator, planning next to the running job's traffic, places it on B. The test
reads every pod's node back from the API server and its spine from the node's labels, and the
new job's status: its communication alone, the slowdown from shared links (none on B) and what
it adds to the running job (none). A third job then has only nodes next to one of the two: its
status shows the slowdown it pays and the one it adds.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.placement import plan_placement
from fabricfit.policy import admit
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    RAIL_GROUP,
    SPINE,
    make_pool,
    planned,
    read_topology,
    submit_job,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess

FABRIC = "h100-leaf-spine-2to1"
MODEL = {"parameters": 20_000_000_000, "hiddenSize": 6144, "layers": 44, "sequenceLength": 256,
         "microBatchSize": 1, "microBatches": 1, "bytesPerElement": 2}  # fmt: skip
PARALLELISM = {"tensor": 8, "data": 3}


def pool_nodes(core: Any, pool: str) -> dict[str, dict[str, str]]:
    listing = core.list_node(label_selector=f"{POOL_LABEL}={pool}").items
    return {n.metadata.name: dict(n.metadata.labels) for n in listing}


def place(core: Any, custom: Any, batch: Any, namespace: str, name: str, pool: str) -> list[str]:
    """Submit a TP8 × DP3 job; the node of each of its pods once all are bound."""
    submit_job(batch, custom, namespace, name, pods=3, pool=pool, parallelism=PARALLELISM,
               model=MODEL)  # fmt: skip
    pods = wait_bound(core, namespace, name, 3)
    wait_condition(custom, namespace, name, "Placed", "True")
    nodes = [pods[i].spec.node_name for i in range(3)]
    assert nodes == planned(read_topology(custom, namespace, name))
    return nodes


def alone_plan(core: Any, pool: str, held: list[str]) -> tuple[set[str], float]:
    """Where the planner puts the job alone (no link load) next to ``held`` nodes, and its
    predicted step communication: the same planner on the nodes read back."""
    raw = [n.to_dict() for n in core.list_node(label_selector=f"{POOL_LABEL}={pool}").items]
    nodes = [{"metadata": {"name": n["metadata"]["name"], "labels": n["metadata"]["labels"]},
              "status": {"allocatable": n["status"]["allocatable"],
                         "conditions": [{"type": "Ready", "status": "True"}]}}
             for n in raw]  # fmt: skip
    snapshot = build_snapshot(nodes, [], scheme="auto", default_fabric=FABRIC)
    spec = {"gpusPerPod": 8, "parallelism": PARALLELISM, "model": MODEL, "fabric": FABRIC}
    request = admit(spec, None, require_workload=False).request
    assert request is not None
    decision = plan_placement(
        snapshot, request, get_profile(FABRIC), reservations={n: 8 for n in held}
    )
    assert decision.predicted is not None
    spines = {snapshot.node(n).labels[SPINE] for n in decision.pods}
    return spines, decision.predicted.step_comm_seconds


def test_a_job_that_ties_alone_is_placed_off_the_spine_a_running_job_saturates(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    pool = "nbr"
    make_pool(core, pool, spines=2, rail_groups_per_spine=3, nodes_per_rail_group=2,
              fabric=FABRIC)  # fmt: skip
    labels = pool_nodes(core, pool)
    started = time.monotonic()
    running = place(core, custom, batch, namespace, "running", pool)
    (spine_a,) = {labels[n][SPINE] for n in running}
    assert len({labels[n][RAIL_GROUP] for n in running}) == 2  # its rings climb two leaves
    first = time.monotonic() - started

    alone_spines, alone_seconds = alone_plan(core, pool, running)
    assert alone_spines == {spine_a}  # alone, the tightest fit: next to the running job

    started = time.monotonic()
    steered = place(core, custom, batch, namespace, "steered", pool)
    second = time.monotonic() - started
    assert {labels[n][SPINE] for n in steered} != {spine_a}
    assert len({labels[n][SPINE] for n in steered}) == 1
    predicted = read_topology(custom, namespace, "steered")["status"]["predicted"]
    assert predicted["aloneStepCommSeconds"] == pytest.approx(alone_seconds, rel=1e-6)
    assert predicted["stepCommSeconds"] == pytest.approx(alone_seconds, rel=1e-6)  # a tie
    assert predicted["neighbourSlowdownSeconds"] == 0.0
    assert predicted["slowdownAddedToOthersSeconds"] == 0.0

    third = place(core, custom, batch, namespace, "third", pool)
    assert not set(third) & (set(running) | set(steered))
    shared = read_topology(custom, namespace, "third")["status"]["predicted"]
    assert shared["neighbourSlowdownSeconds"] > 0
    assert shared["slowdownAddedToOthersSeconds"] > 0
    assert shared["stepCommSeconds"] == pytest.approx(
        shared["aloneStepCommSeconds"] + shared["neighbourSlowdownSeconds"]
    )
    print(
        f"\n[neighbours] running job on {spine_a} placed in {first:.1f} s; the tying job "
        f"placed on {labels[steered[0]][SPINE]} in {second:.1f} s; the third job pays "
        f"{shared['neighbourSlowdownSeconds'] * 1e3:.1f} ms per step from shared links and "
        f"adds {shared['slowdownAddedToOthersSeconds'] * 1e3:.1f} ms to its neighbours"
    )
