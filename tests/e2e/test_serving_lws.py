"""Served models on LeaderWorkerSets made by the real LWS controller, in ``pinned`` mode, from the
samples in ``deploy/samples/serving/``: every pod's node is read back and checked against the
plan and against what the plan promised.

* A disaggregated deployment on GB200-like trays (4 GPUs, NVLink domains of 4 trays): a prefill
  and a decode LeaderWorkerSet of two TP8 replicas each (a leader and a worker tray), their
  TrainingTopologies paired. The prefill replicas spread over racks; the decode side, planned
  second, puts each replica in the NVLink domain of the prefill replica it pairs with.
* A replicated TP8 deployment on DGX H100 nodes, four single-node replicas spread over two racks.
"""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit_dev.e2e.lws import LWS, bound_pods
from fabricfit_dev.e2e.objects import (
    NATIVE,
    POOL_LABEL,
    TT,
    condition,
    make_pool,
    planned,
    read_topology,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

pytestmark = pytest.mark.controllers("lws")

SAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "samples" / "serving"


def sample(file_name: str, pool: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The sample's objects by (kind, name), LeaderWorkerSets fenced to the pool's nodes."""
    docs = yaml.safe_load_all((SAMPLES / file_name).read_text(encoding="utf-8"))
    out = {}
    for loaded in docs:
        doc = copy.deepcopy(loaded)
        if doc["kind"] == "LeaderWorkerSet":
            template = doc["spec"]["leaderWorkerTemplate"]["workerTemplate"]
            template["spec"]["nodeSelector"] = {POOL_LABEL: pool}
        out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def apply(
    custom: Any, namespace: str, docs: dict[tuple[str, str], dict[str, Any]], name: str
) -> None:
    """Create the TrainingTopology ``name`` and its LeaderWorkerSet."""
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], docs[("TrainingTopology", name)]
    )
    lws = docs[("LeaderWorkerSet", name)]
    custom.create_namespaced_custom_object(*LWS[:2], namespace, LWS[2], lws)


def placed(core: Any, custom: Any, namespace: str, name: str, groups: int, size: int) -> list[str]:
    """Wait until every pod is bound where the plan says; the node of each rank block."""
    plan = planned(wait_condition(custom, namespace, name, "Placed", "True", timeout=180))
    pods = wait_for(
        lambda: bound_pods(core, namespace, name, groups, size),
        timeout_seconds=120,
        what=f"the {groups * size} pods of {name} bound",
    )
    nodes = [pods[k].spec.node_name for k in range(groups * size)]
    assert nodes == plan, f"{name}: bound {nodes}, planned {plan}"
    assert all(not p.spec.scheduling_gates for p in pods.values())
    assert {p.metadata.owner_references[0].kind for p in pods.values()} == {"StatefulSet"}
    return nodes


def test_a_disaggregated_deployment_keeps_each_kv_transfer_inside_an_nvlink_domain(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    manifests = make_pool(
        core, "pd", rail_groups_per_spine=2, nodes_per_rail_group=8, nodes_per_rack=4,
        nvlink_domain_nodes=4, gpus_per_node=4, nics_per_node=4, fabric="gb200-nvl72",
    )  # fmt: skip
    labels = {m["metadata"]["name"]: m["metadata"]["labels"] for m in manifests}
    domain = {n: found[NATIVE + "nvlink-domain"] for n, found in labels.items()}
    rack = {n: found[NATIVE + "rack"] for n, found in labels.items()}
    docs = {
        **sample("disaggregated-prefill.yaml", "pd"),
        **sample("disaggregated-decode.yaml", "pd"),
    }

    apply(custom, namespace, docs, "llama-prefill")
    prefill = placed(core, custom, namespace, "llama-prefill", 2, 2)
    apply(custom, namespace, docs, "llama-decode")  # planned second: it reads the prefill plan
    decode = placed(core, custom, namespace, "llama-decode", 2, 2)

    for nodes in (prefill, decode):  # each replica (TP8 over two trays) inside one domain
        for g in range(2):
            assert domain[nodes[2 * g]] == domain[nodes[2 * g + 1]], nodes
    assert rack[prefill[0]] != rack[prefill[2]], prefill  # prefill spread over racks
    for g in range(2):  # decode replica g next to the prefill replica it takes KV from
        assert domain[decode[2 * g]] == domain[prefill[2 * g]], (prefill, decode)
    assert not set(prefill) & set(decode)

    status = read_topology(custom, namespace, "llama-decode")["status"]
    assert status["predicted"]["kvTransferSeconds"] > 0
    assert "prefillCommSeconds" not in status["predicted"]  # the decode side runs none
    assert (
        condition(read_topology(custom, namespace, "llama-decode"), "LatencyTarget")["status"]
        == "True"
    )
    first = read_topology(custom, namespace, "llama-prefill")["status"]
    assert first["predicted"]["prefillCommSeconds"] > 0
    assert "kvTransferSeconds" not in first["predicted"]  # planned first: no partner to price


def test_a_replicated_tp8_deployment_spreads_over_two_racks(
    operator: OperatorProcess, core: Any, custom: Any, namespace: str
) -> None:
    manifests = make_pool(core, "rep", rail_groups_per_spine=1, nodes_per_rail_group=8,
                          nodes_per_rack=4)  # fmt: skip
    rack = {m["metadata"]["name"]: m["metadata"]["labels"][NATIVE + "rack"] for m in manifests}
    docs = sample("replicated-llama.yaml", "rep")

    apply(custom, namespace, docs, "llama-replicas")
    nodes = placed(core, custom, namespace, "llama-replicas", 4, 1)

    assert len(set(nodes)) == 4  # one node each: every TP8 group on one node's NVLink
    assert sorted(Counter(rack[n] for n in nodes).values()) == [2, 2], nodes
    tt = read_topology(custom, namespace, "llama-replicas")
    predicted = tt["status"]["predicted"]
    assert predicted["decodeTokenCommSeconds"] > 0 and predicted["prefillCommSeconds"] > 0
    assert predicted["byDimension"]["data"] == 0  # replicas never all-reduce
    assert condition(tt, "LatencyTarget")["reason"] == "CommunicationWithinTarget"
