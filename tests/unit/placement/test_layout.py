"""Rank layout: groups by rankOrder, EP carved out of DP, pods' rank blocks, validation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.api.models import Parallelism
from fabricfit.placement.layout import GROUP_KINDS, build_layout, validate_layout


def test_megatron_order_tp_fastest() -> None:
    layout = build_layout(Parallelism(tensor=2, pipeline=2, data=2), 2, "tp-cp-ep-dp-pp")
    assert layout.groups["tensor"] == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert layout.groups["data"] == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert layout.groups["pipeline"] == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert layout.groups["expert"] == tuple((r,) for r in range(8))
    assert layout.pods == 4
    assert list(layout.pod_ranks(3)) == [6, 7]


def test_expert_carved_out_of_data() -> None:
    layout = build_layout(Parallelism(tensor=2, data=4, expert=2), 2, "tp-cp-ep-dp-pp")
    # ep digit (stride 2) then dp digit (stride 4)
    assert layout.groups["expert"] == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert layout.groups["data"] == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert layout.radix["dp"] == 2


def test_custom_order_pp_fastest() -> None:
    layout = build_layout(Parallelism(tensor=2, pipeline=2), 2, "pp-tp-cp-ep-dp")
    assert layout.groups["pipeline"] == ((0, 1), (2, 3))
    assert layout.groups["tensor"] == ((0, 2), (1, 3))


def test_context_groups() -> None:
    layout = build_layout(Parallelism(tensor=2, context=2, data=2), 4, "tp-cp-ep-dp-pp")
    assert layout.groups["context"] == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert layout.groups["data"] == ((0, 4), (1, 5), (2, 6), (3, 7))


@pytest.mark.parametrize(
    ("parallelism", "gpus_per_pod", "kwargs", "fragment"),
    [
        (Parallelism(tensor=3, data=1), 8, {}, "not a multiple of gpusPerPod 8"),
        (Parallelism(tensor=8, data=6, expert=4), 8, {}, "expert parallelism 4 does not divide"),
        (Parallelism(tensor=16, data=2), 8, {"max_domain_gpus": 8}, "exceeds the largest NVLink"),
        (Parallelism(tensor=8, data=4, expert=4), 8, {"experts": 6}, "model.experts 6"),
        (Parallelism(tensor=3, data=8), 8, {}, "tensor must divide gpusPerPod"),
    ],
)
def test_each_violation_is_one_reason(
    parallelism: Parallelism, gpus_per_pod: int, kwargs: dict[str, int], fragment: str
) -> None:
    reasons = validate_layout(parallelism, gpus_per_pod, **kwargs)  # type: ignore[arg-type]
    assert any(fragment in r for r in reasons), reasons


def test_tensor_over_domain_allowed_when_preferred() -> None:
    reasons = validate_layout(
        Parallelism(tensor=16, data=2), 8, max_domain_gpus=8, tensor_required=False
    )
    assert reasons == ()


def test_valid_layout_has_no_reasons() -> None:
    assert validate_layout(Parallelism(tensor=8, pipeline=4, data=16), 8, max_domain_gpus=8) == ()


sizes = st.sampled_from([1, 2, 4])
orders = st.permutations(["tp", "cp", "ep", "dp", "pp"]).map("-".join)


@settings(max_examples=60, deadline=None)
@given(tp=sizes, pp=sizes, cp=sizes, ep=st.sampled_from([1, 2]), dp_mult=sizes, order=orders)
def test_groups_partition_the_ranks(
    tp: int, pp: int, cp: int, ep: int, dp_mult: int, order: str
) -> None:
    parallelism = Parallelism(tensor=tp, pipeline=pp, context=cp, expert=ep, data=ep * dp_mult)
    layout = build_layout(parallelism, 1, order)
    expected_sizes = {
        "tensor": tp,
        "context": cp,
        "expert": ep,
        "data": ep * dp_mult,
        "pipeline": pp,
    }
    for kind in GROUP_KINDS:
        ranks = sorted(r for g in layout.groups[kind] for r in g)
        assert ranks == list(range(parallelism.world_size)), kind
        assert {len(g) for g in layout.groups[kind]} == {expected_sizes[kind]}
    for tp_group in layout.groups["tensor"]:
        digits = [layout.digits(r) for r in tp_group]
        assert len({d["tp"] for d in digits}) == tp
        assert len({(d["cp"], d["dp"], d["ep"], d["pp"]) for d in digits}) == 1
    for chain in layout.groups["pipeline"]:
        assert [layout.stage_of(r) for r in chain] == list(range(pp))
