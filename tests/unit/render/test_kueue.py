"""Kueue TAS annotations chosen from a plan, and each label scheme's tier keys."""

from __future__ import annotations

from typing import Any

import pytest

from fabricfit.api.constants import (
    HOSTNAME_LABEL,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    LABEL_NVLINK_DOMAIN,
    LABEL_RACK,
    LABEL_RAIL_GROUP,
    LABEL_SPINE,
)
from fabricfit.api.models import Parallelism
from fabricfit.placement.decision import PlacementDecision, RankPlacement
from fabricfit.placement.layout import build_layout
from fabricfit.render.kueue import (
    build_kueue_annotations as build_from_plan,
)
from fabricfit.render.kueue import (
    fit_to_podset,
    parse_slice_size,
    tier_label_keys,
)

NATIVE = {
    "spine": LABEL_SPINE,
    "rail_group": LABEL_RAIL_GROUP,
    "rack": LABEL_RACK,
    "nvlink_domain": LABEL_NVLINK_DOMAIN,
    "hostname": HOSTNAME_LABEL,
}


def node(name: str, spine: str, rail_group: str, rack: str, domain: str) -> dict[str, str]:
    return {
        LABEL_SPINE: spine,
        LABEL_RAIL_GROUP: rail_group,
        LABEL_RACK: rack,
        LABEL_NVLINK_DOMAIN: domain,
        HOSTNAME_LABEL: name,
    }


# n*: spine s0; m*: spine s1 whose rail group is *also* called rg0 (values are only unique
# within their parent, as Kueue's level tree assumes).
NODES = {
    "n0": node("n0", "s0", "rg0", "r0", "d0"),
    "n1": node("n1", "s0", "rg0", "r0", "d0"),
    "n2": node("n2", "s0", "rg0", "r1", "d1"),
    "n3": node("n3", "s0", "rg0", "r1", "d1"),
    "n4": node("n4", "s0", "rg1", "r2", "d2"),
    "n5": node("n5", "s0", "rg0", "r1", "d5"),
    "m0": node("m0", "s1", "rg0", "r9", "d9"),
    "m1": node("m1", "s1", "rg0", "r9", "d9"),
    "bare": {HOSTNAME_LABEL: "bare"},
}


def decision(
    pods: list[str],
    tensor: int = 8,
    rank_order: str = "tp-cp-ep-dp-pp",
    gpus_per_pod: int = 8,
    feasible: bool = True,
) -> PlacementDecision:
    world = len(pods) * gpus_per_pod
    layout = build_layout(
        Parallelism(tensor=tensor, data=world // tensor), gpus_per_pod, rank_order
    )
    return PlacementDecision(
        feasible=feasible,
        fabric="dgx-h100",
        groups=layout.groups,
        pods=tuple(pods) if feasible else (),
        assignments=tuple(
            RankPlacement(
                rank=r,
                node=pods[r // gpus_per_pod],
                gpu=r % gpus_per_pod,
                pod=r // gpus_per_pod,
                local=r % gpus_per_pod,
            )
            for r in range(world)
        )
        if feasible
        else (),
        reasons=() if feasible else ("needs 4 free nodes, 2 available",),
    )


REQUIRED = KUEUE_REQUIRED_TOPOLOGY
PREFERRED = KUEUE_PREFERRED_TOPOLOGY
SLICE = {KUEUE_SLICE_REQUIRED_TOPOLOGY: LABEL_NVLINK_DOMAIN, KUEUE_SLICE_SIZE: "2"}

CASES = [
    ("one node: hostname", decision(["n0"]), {REQUIRED: HOSTNAME_LABEL}),
    ("one NVLink domain", decision(["n0", "n1"]), {REQUIRED: LABEL_NVLINK_DOMAIN}),
    (
        "one NVLink domain, TP over 2 pods: no slice needed",
        decision(["n0", "n1"], tensor=16),
        {REQUIRED: LABEL_NVLINK_DOMAIN},
    ),
    ("one rack of two domains", decision(["n2", "n5", "n2", "n3"]), {REQUIRED: LABEL_RACK}),
    (
        "one rail group, TP over 2 pods in one domain each",
        decision(["n0", "n1", "n2", "n3"], tensor=16),
        {REQUIRED: LABEL_RAIL_GROUP, **SLICE},
    ),
    (
        "TP groups straddle domains: no slice",
        decision(["n0", "n2", "n1", "n3"], tensor=16),
        {REQUIRED: LABEL_RAIL_GROUP},
    ),
    (
        "TP not fastest in rank order: slices are not the TP groups",
        decision(["n0", "n1", "n2", "n3"], tensor=16, rank_order="dp-tp-cp-ep-pp"),
        {REQUIRED: LABEL_RAIL_GROUP},
    ),
    ("one spine, two rail groups", decision(["n0", "n4"]), {REQUIRED: LABEL_SPINE}),
    (
        "equal rail-group values under two spines: not one domain",
        decision(["n0", "n1", "m0", "m1"], tensor=16),
        {PREFERRED: LABEL_RAIL_GROUP, **SLICE},
    ),
    ("a node without tier labels", decision(["n0", "bare"]), {PREFERRED: LABEL_RAIL_GROUP}),
    (
        "infeasible: preference only",
        decision(["n0"], feasible=False),
        {PREFERRED: LABEL_RAIL_GROUP},
    ),
    (
        "tensor not a multiple of gpusPerPod: no slice",
        decision(["n0", "n1", "n2", "n3", "n0", "n1"], tensor=12, gpus_per_pod=4),
        {REQUIRED: LABEL_RAIL_GROUP},
    ),
]


def build_kueue_annotations(plan: PlacementDecision, **kwargs: Any) -> dict[str, str]:
    pods = plan.pods if plan.feasible else ()
    return build_from_plan(pods, tensor_groups=plan.groups.get("tensor", ()), **kwargs)


@pytest.mark.parametrize(("name", "plan", "expected"), CASES, ids=[c[0] for c in CASES])
def test_annotations_from_plan(
    name: str, plan: PlacementDecision, expected: dict[str, str]
) -> None:
    tensor = len(plan.groups["tensor"][0]) if plan.groups.get("tensor") else 8
    gpus_per_pod = len(plan.assignments) // len(plan.pods) if plan.pods else 8
    got = build_kueue_annotations(
        plan, gpus_per_pod=gpus_per_pod, tensor=tensor, tier_keys=NATIVE, node_labels=NODES
    )
    assert got == expected


def test_tier_keys_limit_the_choice() -> None:
    plan = decision(["n0", "n1", "n2", "n3"], tensor=16)
    no_rack_no_rail = {k: v for k, v in NATIVE.items() if k not in ("rack", "rail_group")}
    assert build_kueue_annotations(
        plan, gpus_per_pod=8, tensor=16, tier_keys=no_rack_no_rail, node_labels=NODES
    ) == {REQUIRED: LABEL_SPINE, **SLICE}
    only_nvlink = {"nvlink_domain": LABEL_NVLINK_DOMAIN}
    assert build_kueue_annotations(
        plan, gpus_per_pod=8, tensor=16, tier_keys=only_nvlink, node_labels=NODES
    ) == {PREFERRED: LABEL_NVLINK_DOMAIN, **SLICE}
    assert (
        build_kueue_annotations(plan, gpus_per_pod=8, tensor=16, tier_keys={}, node_labels=NODES)
        == {}
    )


TOPO_V1 = "fabric.topograph.run/"
CLIQUE = "nvidia.com/gpu.clique"
EKS = "topology.k8s.aws/network-node-layer-"
CW_IB = "ib.coreweave.cloud/"
CW_ROCE = "backend.coreweave.cloud/"
H = {"hostname": HOSTNAME_LABEL}


@pytest.mark.parametrize(
    ("scheme", "nodes", "keys"),
    [
        ("native", [], NATIVE),
        ("auto", [], NATIVE),
        (
            "topograph",
            [],
            {
                "spine": TOPO_V1 + "tier-1",
                "rail_group": TOPO_V1 + "tier-0",
                "rack": "accelerator.topograph.run/sub-domain",
                "nvlink_domain": "accelerator.topograph.run/domain",
                **H,
            },
        ),
        (
            "topograph",
            [{"network.topology.nvidia.com/leaf": "l", "network.topology.nvidia.com/spine": "s"}],
            {
                "spine": "network.topology.nvidia.com/spine",
                "rail_group": "network.topology.nvidia.com/leaf",
                **H,
            },
        ),
        (
            "auto",
            [{TOPO_V1 + "tier-0": "a", TOPO_V1 + "tier-1": "b", CLIQUE: "u.1"}],
            {
                "spine": TOPO_V1 + "tier-1",
                "rail_group": TOPO_V1 + "tier-0",
                "nvlink_domain": CLIQUE,
                **H,
            },
        ),
        ("gfd", [], {"nvlink_domain": CLIQUE, **H}),
        (
            "gke",
            [],
            {
                "spine": "cloud.google.com/gce-topology-block",
                "rail_group": "cloud.google.com/gce-topology-subblock",
                "nvlink_domain": CLIQUE,
                **H,
            },
        ),
        (
            "eks",
            [{EKS + "1": "a", EKS + "2": "b", EKS + "3": "c"}],
            {"spine": EKS + "2", "rail_group": EKS + "3", **H},
        ),
        (
            "eks",
            [{EKS + "1": "a", EKS + "2": "b", EKS + "3": "c", EKS + "4": "d", CLIQUE: "u.1"}],
            {"spine": EKS + "3", "rail_group": EKS + "4", "nvlink_domain": CLIQUE, **H},
        ),
        (
            "eks",
            [{EKS + "1": "a", "topology.k8s.aws/ultraserver-id": "u"}],
            {"rail_group": EKS + "1", "nvlink_domain": "topology.k8s.aws/ultraserver-id", **H},
        ),
        (
            "oke",
            [],
            {
                "spine": "oci.oraclecloud.com/rdma.network_block_id",
                "rail_group": "oci.oraclecloud.com/rdma.local_block_id",
                "rack": "oci.oraclecloud.com/host.rack_id",
                "nvlink_domain": "oci.oraclecloud.com/host.gpu_memory_fabric_id",
                **H,
            },
        ),
        (
            "coreweave",
            [{CW_IB + "leafgroup": "l", CW_IB + "superpod": "p", CLIQUE: "u.1"}],
            {
                "spine": CW_IB + "superpod",
                "rail_group": CW_IB + "leafgroup",
                "nvlink_domain": CLIQUE,
                **H,
            },
        ),
        (
            "coreweave",
            [
                {
                    CW_ROCE + "leafgroup": "l",
                    CW_ROCE + "fabric": "f",
                    "node.coreweave.cloud/rack": "r",
                    "ds.coreweave.com/nvlink.domain": "d",
                }
            ],
            {
                "spine": CW_ROCE + "fabric",
                "rail_group": CW_ROCE + "leafgroup",
                "rack": "node.coreweave.cloud/rack",
                "nvlink_domain": "ds.coreweave.com/nvlink.domain",
                **H,
            },
        ),
        (
            # auto on a GKE cluster where someone also set native rail groups: native wins
            # where nodes carry it, GKE fills the rest.
            "auto",
            [
                {
                    "cloud.google.com/gce-topology-block": "b",
                    "cloud.google.com/gce-topology-subblock": "sb",
                    LABEL_RAIL_GROUP: "rg",
                }
            ],
            {"spine": "cloud.google.com/gce-topology-block", "rail_group": LABEL_RAIL_GROUP, **H},
        ),
    ],
)
def test_tier_label_keys(scheme: str, nodes: list[dict[str, str]], keys: dict[str, str]) -> None:
    assert tier_label_keys(scheme, nodes) == keys


@pytest.mark.parametrize(
    ("count", "kept"),
    [(None, True), (1, False), (2, True), (3, False), (4, True), (6, True), (7, False)],
)
def test_fit_to_podset_drops_slices_that_do_not_tile_the_podset(
    count: int | None, kept: bool
) -> None:
    annotations = {REQUIRED: LABEL_RAIL_GROUP, **SLICE}
    expected = annotations if kept else {REQUIRED: LABEL_RAIL_GROUP}
    assert fit_to_podset(annotations, count) == expected
    assert fit_to_podset({PREFERRED: LABEL_RAIL_GROUP}, 1) == {PREFERRED: LABEL_RAIL_GROUP}
    broken = {PREFERRED: LABEL_RAIL_GROUP, KUEUE_SLICE_SIZE: "0"}
    assert fit_to_podset(broken, None) == {PREFERRED: LABEL_RAIL_GROUP}


@pytest.mark.parametrize(
    ("value", "size"), [("2", 2), ("0", None), ("", None), ("-1", None), ("x", None), (None, None)]
)
def test_parse_slice_size(value: str | None, size: int | None) -> None:
    assert parse_slice_size(value) == size
