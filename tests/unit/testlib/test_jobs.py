"""The e2e/benchmark job builders: a Job fenced into its pool and a TrainingTopology the
operator's own spec model accepts."""

from __future__ import annotations

from fabricfit.api.constants import GROUP, PLURAL, VERSION
from fabricfit.api.models import TrainingTopologySpec
from fabricfit_dev.cluster.fakenodes import FakeFabric, node_manifests
from fabricfit_dev.cluster.jobs import TT, indexed_job, topology


def test_the_job_selects_exactly_the_nodes_of_its_pool() -> None:
    job = indexed_job("j", pods=3, pool="a", gpus=4)
    selector = job["spec"]["template"]["spec"]["nodeSelector"]
    nodes = node_manifests(FakeFabric(pool="a", nodes_per_rail_group=2)) + node_manifests(
        FakeFabric(pool="b", prefix="other", nodes_per_rail_group=2)
    )
    chosen = [
        n["metadata"]["name"]
        for n in nodes
        if all(n["metadata"]["labels"].get(k) == v for k, v in selector.items())
    ]
    assert len(chosen) == 4 and all(not name.startswith("other") for name in chosen)
    assert job["spec"]["suspend"] is True and job["spec"]["completions"] == 3
    limits = job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "4"}


def test_the_topology_is_a_valid_spec_for_its_job() -> None:
    assert (GROUP, VERSION, PLURAL) == TT
    tt = topology("t", "j", {"tensor": 8, "data": 2}, labelScheme="native")
    spec = TrainingTopologySpec.model_validate(tt["spec"])
    assert spec.workload_ref.name == "j" and spec.parallelism.data == 2
    assert tt["apiVersion"] == f"{GROUP}/{VERSION}"
