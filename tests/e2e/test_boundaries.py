"""The operator stays inside its boundaries: it acts only in the namespaces it is configured
for, and only on the workload its TrainingTopology names in the same namespace."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabricfit_dev.e2e.objects import (
    TT,
    indexed_job,
    make_pool,
    read_topology,
    topology,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess


@pytest.fixture
def other_namespace(core: Any) -> Iterator[str]:
    name = f"e2e-other-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name
    core.delete_namespace(name)


def test_unconfigured_namespaces_are_left_alone(
    operator: OperatorProcess,
    kubeconfig: Path,
    tmp_path: Path,
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    other_namespace: str,
) -> None:
    make_pool(core, "scoped", rail_groups_per_spine=1, nodes_per_rail_group=2)
    operator.stop()  # the shared operator watches every namespace
    scoped = OperatorProcess(kubeconfig, tmp_path, "--namespace", namespace)
    try:
        scoped.start()
        for ns in (namespace, other_namespace):
            batch.create_namespaced_job(ns, indexed_job("job", 1, "scoped"))
            custom.create_namespaced_custom_object(
                *TT[:2], ns, TT[2], topology("tt", "job", {"tensor": 8})
            )
        wait_condition(custom, namespace, "tt", "Placed", "True")
        time.sleep(5)  # more than two resync periods of the scoped operator
        ignored = read_topology(custom, other_namespace, "tt")
        assert "status" not in ignored or not ignored["status"].get("conditions")
        assert not ignored["metadata"].get("finalizers")
        job = batch.read_namespaced_job("job", other_namespace)
        assert job.spec.suspend is True and not job.spec.template.spec.scheduling_gates
    finally:
        scoped.stop()
        operator.start()


def test_workload_in_another_namespace_cannot_be_referenced(
    operator: OperatorProcess, custom: Any, batch: Any, namespace: str, other_namespace: str
) -> None:
    batch.create_namespaced_job(other_namespace, indexed_job("victim", 1, "nowhere"))
    spec = topology("reach", "victim", {"tensor": 8})
    spec["spec"]["workloadRef"]["namespace"] = other_namespace  # not part of the API: pruned
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], spec)
    stored = read_topology(custom, namespace, "reach")
    assert "namespace" not in stored["spec"]["workloadRef"]

    tt = wait_condition(custom, namespace, "reach", "Placed", "False")
    placed = next(c for c in tt["status"]["conditions"] if c["type"] == "Placed")
    assert placed["reason"] == "WorkloadNotFound"
    job = batch.read_namespaced_job("victim", other_namespace)
    assert job.spec.suspend is True
    assert not job.spec.template.spec.scheduling_gates
    assert "fabricfit.dev/topology" not in (job.spec.template.metadata.labels or {})
