"""Namespaced mode counts every GPU of the cluster, and Placed follows the last bind.

A namespaced operator (``-n`` the test's namespace) shares nodes with another tenant whose pods
live in a namespace it does not watch: it reads those pods cluster-wide (read-only) and plans
around their GPUs, so nothing is double-booked. Separately, with a resync period far longer than
the test, ``Placed`` turns True within 2 s of the last pod being bound (event-driven).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabricfit_dev.e2e.objects import (
    TT,
    condition,
    foreign_pod,
    indexed_job,
    make_pool,
    planned,
    topology,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.e2e.reliability import gpus_in_use
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

PLACED_AFTER_BIND_LIMIT_SECONDS = 2.0


@pytest.fixture
def tenant(core: Any) -> Iterator[str]:
    name = f"tenant-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def test_namespaced_operator_plans_around_other_tenants_gpus(
    operator: OperatorProcess,
    kubeconfig: Path,
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    tenant: str,
    tmp_path: Path,
) -> None:
    nodes = [
        n["metadata"]["name"]
        for n in make_pool(core, "nsd", rail_groups_per_spine=1, nodes_per_rail_group=4)
    ]
    for node in nodes[:2]:  # the other tenant fills two of the four nodes
        core.create_namespaced_pod(tenant, foreign_pod(f"busy-{node}", node, 8))
    operator.stop()
    scoped = OperatorProcess(kubeconfig, tmp_path, "--namespace", namespace)
    try:
        scoped.start()
        batch.create_namespaced_job(namespace, indexed_job("scoped", 2, "nsd"))
        custom.create_namespaced_custom_object(
            *TT[:2], namespace, TT[2], topology("scoped", "scoped", {"tensor": 8, "data": 2})
        )
        tt = wait_condition(custom, namespace, "scoped", "Placed", "True", timeout=120)
        assert set(planned(tt)) == set(nodes[2:]), planned(tt)
        used = gpus_in_use(core, set(nodes))
        assert used == dict.fromkeys(nodes, 8), f"GPUs double-booked or idle: {used}"
        # A third job fits nowhere: the tenant's GPUs are not free, whatever namespace holds them.
        batch.create_namespaced_job(namespace, indexed_job("late", 1, "nsd"))
        custom.create_namespaced_custom_object(
            *TT[:2], namespace, TT[2], topology("late", "late", {"tensor": 8})
        )
        waiting = wait_condition(custom, namespace, "late", "Planned", "False", timeout=60)
        assert condition(waiting, "Planned")["reason"] == "InsufficientGPUs"  # type: ignore[index]
        assert "forbidden" not in scoped.logs().lower()
    finally:
        scoped.stop()
        operator.start()


def test_placed_follows_the_last_bind_not_the_resync(
    operator: OperatorProcess,
    kubeconfig: Path,
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    make_pool(core, "lat", nodes_per_rail_group=4)
    operator.stop()
    slow = OperatorProcess(kubeconfig, tmp_path, "--resync-seconds", "120")
    try:
        slow.start()
        batch.create_namespaced_job(namespace, indexed_job("lat", 4, "lat"))
        custom.create_namespaced_custom_object(
            *TT[:2], namespace, TT[2], topology("lat", "lat", {"tensor": 8, "data": 4})
        )
        seen: dict[str, float] = {}

        def observe() -> bool:
            now = time.monotonic()
            pods = core.list_namespaced_pod(namespace, label_selector="job-name=lat").items
            if "bound" not in seen and len(pods) == 4 and all(p.spec.node_name for p in pods):
                seen["bound"] = now
            tt = custom.get_namespaced_custom_object(*TT[:2], namespace, TT[2], "lat")
            placed = condition(tt, "Placed")
            if placed and placed["status"] == "True":
                seen.setdefault("placed", now)
            return "bound" in seen and "placed" in seen

        wait_for(observe, timeout_seconds=90, interval_seconds=0.05, what="bound and Placed")
        lag = seen["placed"] - seen["bound"]
        print(f"\n[placed] Placed {lag:.2f} s after the last pod was bound (resync 120 s)")
        assert lag <= PLACED_AFTER_BIND_LIMIT_SECONDS
        pods = wait_bound(core, namespace, "lat", 4)
        tt = custom.get_namespaced_custom_object(*TT[:2], namespace, TT[2], "lat")
        assert [pods[i].spec.node_name for i in sorted(pods)] == planned(tt)
    finally:
        slow.stop()
        operator.start()
