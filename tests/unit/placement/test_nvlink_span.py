"""Which groups of a plan ride NVLink between trays of one NVLink domain (GB200 NVL72)."""

from __future__ import annotations

import pytest

from fabricfit.api.models import Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.placement import build_layout
from fabricfit.placement.nvlink_span import nvlink_span

RACKS = {f"t{i}": f"rack-{i // 18}" for i in range(36)}  # 18 trays of 4 GPUs per rack


def span(parallelism: dict[str, int], gpus_per_pod: int, plan: list[str]):  # type: ignore[no-untyped-def]
    layout = build_layout(Parallelism(**parallelism), gpus_per_pod, "tp-cp-ep-dp-pp")
    return nvlink_span(plan, layout.groups, gpus_per_pod, RACKS)


@pytest.mark.parametrize(
    ("parallelism", "plan", "groups"),
    [
        # TP4 in one 4-GPU tray: intra-node NVLink only.
        ({"tensor": 4}, ["t0"], {}),
        # TP8 over two trays of one rack: needs multi-node NVLink; DP pairs too.
        ({"tensor": 8, "data": 2}, ["t0", "t1", "t2", "t3"], {"tensor": 2, "data": 8}),
        # TP8 split over two racks: the network anyway, nothing to set up for it.
        ({"tensor": 8}, ["t17", "t18"], {}),
        # DP over two trays of one rack counts too (priced at NVLink speed).
        ({"tensor": 4, "data": 2}, ["t0", "t5"], {"data": 4}),
        # Expert all-to-all across trays of one rack.
        ({"tensor": 4, "data": 4, "expert": 4}, ["t0", "t1", "t2", "t3"], {"expert": 4, "data": 4}),
    ],
)
def test_groups_spanning_trays_of_one_domain_are_counted(
    parallelism: dict[str, int], plan: list[str], groups: dict[str, int]
) -> None:
    found = span(parallelism, 4, plan)
    assert dict(found.groups) == groups
    assert found.needed is bool(groups)
    assert found.nodes == tuple(dict.fromkeys(plan))


def test_the_span_names_domains_nodes_and_shared_nodes() -> None:
    # Two 2-GPU pods per tray: TP4 over two pods on one node, TP groups 0/1 stay on t0/t1,
    # the data groups cross from t0 to t1 inside rack-0.
    found = span({"tensor": 4, "data": 2}, 2, ["t0", "t0", "t1", "t1"])
    assert dict(found.groups) == {"data": 4}
    assert found.domains == ("rack-0",)
    assert found.nodes == ("t0", "t1")
    assert found.shared_nodes == ("t0", "t1")
    assert found.describe() == "4 data groups"


def test_nodes_without_a_domain_are_domains_alone() -> None:
    layout = build_layout(Parallelism(tensor=8), 4, "tp-cp-ep-dp-pp")
    assert not nvlink_span(["a", "b"], layout.groups, 4, {}).needed
    assert nvlink_span(["a", "b"], layout.groups, 4, {"a": "d", "b": "d"}).describe() == (
        "1 tensor group"
    )


def test_an_empty_or_partial_plan_is_harmless() -> None:
    layout = build_layout(Parallelism(tensor=8, data=2), 4, "tp-cp-ep-dp-pp")
    assert not nvlink_span([], layout.groups, 4, RACKS).needed
    partial = nvlink_span(["t0", "t1"], layout.groups, 4, RACKS)
    assert dict(partial.groups) == {"tensor": 1}
    assert not nvlink_span(["t0"], layout.groups, 0, RACKS).needed


@pytest.mark.parametrize(
    ("fabric", "needed"),
    [("gb200-nvl72", True), ("dgx-h100", True), ("tpu-v5e", False), ("tpu-v4", False)],
)
def test_only_a_gpu_fabric_spans_trays_over_nvlink(fabric: str, needed: bool) -> None:
    """A TPU slice is labelled as the nodes' scale-up domain too, but its chips talk over ICI:
    a TPU plan asked for an NVIDIA ComputeDomain. A GPU profile of one-node domains on
    rack-labelled trays still spans them (the cost model priced NVLink between them)."""
    layout = build_layout(Parallelism(tensor=8, data=2), 4, "tp-cp-ep-dp-pp")
    plan = ["t0", "t1", "t2", "t3"]
    found = nvlink_span(plan, layout.groups, 4, RACKS, profile=get_profile(fabric))
    assert found.needed is needed
