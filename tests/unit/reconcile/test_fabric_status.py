"""The operator says which fabric it priced a job on and why (status.fabric, fabricReason),
and refuses a fabric it cannot use with Planned=False/InvalidFabric naming file and field."""

from __future__ import annotations

import asyncio
from typing import Any

import yaml
from tests.unit.reconcile.test_same_decision import JOB, NAME, NAMESPACE, MemoryApi, node

from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.profiles.catalog import build_catalog, dump_profile
from fabricfit.reconcile.context import OperatorConfig, OperatorState, Views
from fabricfit.reconcile.service import reconcile

SPEC = {
    "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": JOB},
    "gpusPerPod": 8,
    "parallelism": {"tensor": 8, "data": 2},
}
WORKLOAD = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": JOB, "namespace": NAMESPACE},
    "spec": {
        "parallelism": 2,
        "completions": 2,
        "completionMode": "Indexed",
        "suspend": True,
        "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
    },
}


def status_of(spec: dict[str, Any], nodes: list[Any], config: OperatorConfig) -> dict[str, Any]:
    api = MemoryApi(WORKLOAD)
    state = OperatorState(config=config, rest=api)  # type: ignore[arg-type]
    tt = {"apiVersion": "fabricfit.dev/v1alpha1", "kind": "TrainingTopology",
          "metadata": {"name": NAME, "namespace": NAMESPACE, "generation": 1,
                       "resourceVersion": "1"}, "spec": spec}  # fmt: skip
    views = Views(nodes=nodes, pods=[], topologies={})
    asyncio.run(reconcile(tt, state, lambda: views))
    return api.status


def planned(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status.get("conditions", []) if c["type"] == "Planned")


def catalog_with(name: str, **changes: object) -> Any:
    doc = yaml.safe_load(dump_profile(get_profile("dgx-h100")))
    doc.update(name=name, **changes)
    return build_catalog(
        [(f"/etc/fabricfit/fabrics/{name}.yaml", yaml.safe_dump(doc))], strict=False
    )


def test_status_names_the_fabric_and_why() -> None:
    nodes = [node(i, 8, 0, "site-h100") for i in range(3)]
    status = status_of(SPEC, nodes, OperatorConfig(catalog=catalog_with("site-h100")))
    assert planned(status)["reason"] == "Planned", planned(status)
    assert status["fabric"] == "site-h100"
    assert "topology.fabricfit.dev/fabric=site-h100" in status["fabricReason"]


def test_a_refused_profile_file_is_invalid_fabric() -> None:
    config = OperatorConfig(catalog=catalog_with("broken", nic_efficiency=9))
    status = status_of({**SPEC, "fabric": "broken"}, [node(0, 8, 0, None)], config)
    condition = planned(status)
    assert (condition["status"], condition["reason"]) == ("False", "InvalidFabric")
    assert "/etc/fabricfit/fabrics/broken.yaml" in condition["message"]
    assert "'nic_efficiency'" in condition["message"]
