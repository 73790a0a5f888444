"""Concurrency and load on the real control plane.

A burst of TrainingTopologies on a pool of simulated nodes: every job placed, no GPU
double-booked (from the bound pods), in bounded time (``make test`` drains 10 jobs on 32 nodes,
the 30 on 64 are marked ``slow``; the full 200-on-512 run is ``benchmarks/operator_load.py``). Two
replicas with kopf peering: only the higher-priority one acts (the other's REST client makes no
request at all), and the other takes over when it leaves.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabricfit_dev.e2e.objects import (
    make_pool,
    placed_names,
    planned,
    submit_job,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.e2e.peering import apply_peering_crds, peers_of
from fabricfit_dev.e2e.reliability import MeteredOperator, gpus_in_use
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

BURST_DRAIN_LIMIT_SECONDS = 120


@pytest.mark.parametrize(
    ("burst_jobs", "rail_groups"),
    [pytest.param(10, 2, id="short"), pytest.param(30, 4, id="full", marks=pytest.mark.slow)],
)
def test_burst_of_topologies_drains_without_double_booking(
    operator: OperatorProcess,
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    burst_jobs: int,
    rail_groups: int,
) -> None:
    pool = f"burst{16 * rail_groups}"
    nodes = make_pool(core, pool, rail_groups_per_spine=rail_groups, nodes_per_rail_group=16)
    names = {n["metadata"]["name"] for n in nodes}
    rng = random.Random(30)
    sizes = [rng.choice([1, 1, 2, 2, 4]) for _ in range(burst_jobs)]
    assert sum(sizes) <= len(names)
    start = time.monotonic()
    for i, pods in enumerate(sizes):
        submit_job(batch, custom, namespace, f"b{i}", pods=pods, pool=pool,
                   parallelism={"tensor": 8, "data": pods})  # fmt: skip
    wait_for(
        lambda: len(placed_names(custom, namespace)) == burst_jobs,
        BURST_DRAIN_LIMIT_SECONDS,
        1.0,
        f"{burst_jobs} jobs placed",
    )
    drain = time.monotonic() - start
    used = gpus_in_use(core, names)
    assert all(v <= 8 for v in used.values()), f"GPUs double-booked: {used}"
    assert sum(used.values()) == 8 * sum(sizes)
    for i in rng.sample(range(burst_jobs), 5):  # spot-check plans against the bindings
        tt = wait_condition(custom, namespace, f"b{i}", "Placed", "True")
        pods = wait_bound(core, namespace, f"b{i}", sizes[i])
        assert [pods[k].spec.node_name for k in sorted(pods)] == planned(tt)
    print(f"\n[load] {burst_jobs} jobs ({sum(sizes)} pods) on {len(names)} nodes: {drain:.1f} s")
    assert operator.alive()


@pytest.fixture
def peering(kubectl: list[str], tmp_path: Path) -> Iterator[str]:
    """kopf's peering CRDs and a ClusterKopfPeering object of a fresh name."""
    apply_peering_crds(kubectl, tmp_path)
    name = f"ff-{uuid.uuid4().hex[:6]}"
    peer = f"apiVersion: kopf.dev/v1\nkind: ClusterKopfPeering\nmetadata: {{name: {name}}}\n"
    subprocess.run([*kubectl, "apply", "-f", "-"], input=peer.encode(), check=True)
    yield name
    subprocess.run(
        [*kubectl, "delete", "clusterkopfpeering", name], capture_output=True, check=False
    )


def test_two_replicas_with_peering_only_one_acts(
    operator: OperatorProcess,
    peering: str,
    kubeconfig: Path,
    kubectl: list[str],
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    make_pool(core, "peers", nodes_per_rail_group=4)
    operator.stop()  # the session's standalone operator would act regardless of peering
    high = MeteredOperator(kubeconfig, tmp_path / "high", "--peering", peering, "--priority", "100")
    low = MeteredOperator(kubeconfig, tmp_path / "low", "--peering", peering, "--priority", "10")
    try:
        high.start()
        low.start()
        wait_for(lambda: len(peers_of(kubectl, peering)) == 2, 60, what="both replicas peered")
        for i in range(3):
            submit_job(batch, custom, namespace, f"p{i}", pods=2, pool="peers",
                       parallelism={"tensor": 8, "data": 2})  # fmt: skip
        for i in range(3):
            wait_condition(custom, namespace, f"p{i}", "Placed", "True")
        assert any(k[0] == "PATCH" for k in high.requests()), high.requests()
        assert not low.writes(), f"the paused replica wrote: {low.writes()}"
        assert "Resuming operations" not in low.logs()

        high.stop(signal.SIGTERM)  # a clean exit removes it from the peering object
        wait_for(lambda: "Resuming operations" in low.logs(), 90, what="low resumes")
        submit_job(batch, custom, namespace, "after", pods=2, pool="peers",
                   parallelism={"tensor": 8, "data": 2})  # fmt: skip
        wait_condition(custom, namespace, "after", "Placed", "True", 120)
        assert any(k[0] == "PATCH" for k in low.requests()), low.requests()
        assert low.alive()
    finally:
        high.stop()
        low.stop()
        operator.start()
