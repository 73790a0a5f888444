"""The training-step communication model and its lower bound."""

from __future__ import annotations

import pytest

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.cost import CostError, estimate_step, step_lower_bound
from fabricfit.cost.volumes import DIMENSIONS, step_calls
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import GpuSlot

H100 = get_profile("dgx-h100")
LLAMA70B = ModelShape(parameters=70_000_000_000, hidden_size=8192, layers=80, micro_batches=16)


def cluster(nodes: int, *, su_nodes: int = 32) -> list[GpuSlot]:
    return [
        GpuSlot(f"n{n}", j, j, f"n{n}", f"su{n // su_nodes}", "s0")
        for n in range(nodes)
        for j in range(8)
    ]


def megatron(t: int, d: int, p: int, c: int = 1, e: int = 1) -> dict[str, list[list[int]]]:
    """Groups for rank order tp-cp-dp-pp (tp fastest); expert groups are runs of the dp index."""

    def rank(ti: int, ci: int, di: int, pi: int) -> int:
        return ti + t * (ci + c * (di + d * pi))

    return {
        "tensor": [
            [rank(i, ci, di, pi) for i in range(t)]
            for ci in range(c)
            for di in range(d)
            for pi in range(p)
        ],
        "context": [
            [rank(ti, i, di, pi) for i in range(c)]
            for ti in range(t)
            for di in range(d)
            for pi in range(p)
        ],
        "data": [
            [rank(ti, ci, i, pi) for i in range(d)]
            for ti in range(t)
            for ci in range(c)
            for pi in range(p)
        ],
        "expert": [
            [rank(ti, ci, di0 + i, pi) for i in range(e)]
            for ti in range(t)
            for ci in range(c)
            for di0 in range(0, d, e)
            for pi in range(p)
        ],
        "pipeline": [
            [rank(ti, ci, di, i) for i in range(p)]
            for ti in range(t)
            for ci in range(c)
            for di in range(d)
        ],
    }


def test_keys_and_total() -> None:
    par = Parallelism(tensor=8, pipeline=4, data=4)
    est = estimate_step(megatron(8, 4, 4), cluster(16), par, LLAMA70B, H100)
    assert tuple(est.by_dimension) == DIMENSIONS
    assert est.step_comm_seconds == pytest.approx(sum(est.by_dimension.values()))
    assert (
        est.by_dimension["tensor"] > 0
        and est.by_dimension["data"] > 0
        and est.by_dimension["pipeline"] > 0
    )
    assert est.by_dimension["context"] == 0 and est.by_dimension["expert"] == 0


def test_tensor_parallel_across_nodes_is_much_slower() -> None:
    par = Parallelism(tensor=8, data=4)
    slots = cluster(4)
    inside = estimate_step(megatron(8, 4, 1), slots, par, LLAMA70B, H100)
    # the same ranks with the node index varying fastest: every TP group spans all 4 nodes
    scattered = [slots[(r % 4) * 8 + r // 4] for r in range(32)]
    across = estimate_step(megatron(8, 4, 1), scattered, par, LLAMA70B, H100)
    assert across.by_dimension["tensor"] > 3 * inside.by_dimension["tensor"]


def test_lower_bound_never_exceeds_a_real_placement() -> None:
    for t, d, p in [(8, 4, 4), (8, 16, 2), (4, 8, 2), (2, 32, 1)]:
        par = Parallelism(tensor=t, data=d, pipeline=p)
        groups = megatron(t, d, p)
        predicted = estimate_step(groups, cluster(t * d * p // 8), par, LLAMA70B, H100)
        bound = step_lower_bound(par, LLAMA70B, H100, 8, groups)
        for dim in DIMENSIONS:
            assert bound.by_dimension[dim] <= predicted.by_dimension[dim] * 1.0001, (t, d, p, dim)
        assert bound.spine_bytes_per_step == 0


def test_zero3_costs_more_data_parallel_time_than_zero1() -> None:
    par = Parallelism(tensor=8, data=8)
    groups, slots = megatron(8, 8, 1), cluster(8)
    z1 = estimate_step(groups, slots, par, LLAMA70B, H100)
    z3 = estimate_step(groups, slots, par, LLAMA70B.model_copy(update={"zero_stage": 3}), H100)
    assert z3.by_dimension["data"] > 1.3 * z1.by_dimension["data"]


def test_moe_and_context_parallel_dimensions_are_priced() -> None:
    moe = ModelShape(experts=64, top_k=8, micro_batches=4)
    par = Parallelism(tensor=2, context=2, data=8, expert=4)
    est = estimate_step(megatron(2, 8, 1, c=2, e=4), cluster(4), par, moe, H100)
    assert est.by_dimension["expert"] > 0 and est.by_dimension["context"] > 0
    assert [c.collective.value for c in step_calls(par, moe)["context"]] == [
        "all-gather",
        "reduce-scatter",
    ]


def test_no_model_uses_defaults_and_dp_across_rail_groups_crosses_the_spine() -> None:
    par = Parallelism(tensor=8, data=8)
    one_su = estimate_step(megatron(8, 8, 1), cluster(8), par, None, H100)
    two_su = estimate_step(megatron(8, 8, 1), cluster(8, su_nodes=4), par, None, H100)
    assert one_su.spine_bytes_per_step == 0
    assert two_su.spine_bytes_per_step > 0
    assert two_su.by_dimension["data"] >= one_su.by_dimension["data"]


def test_ranks_outside_the_slots_are_an_error() -> None:
    with pytest.raises(CostError):
        estimate_step({"tensor": [[0, 99]]}, cluster(1), Parallelism(tensor=2), None, H100)


def test_a_1024_gpu_job_is_priced_per_dimension() -> None:
    # Its speed (target ~5 ms) is measured by benchmarks/cost_speed.py, not asserted here.
    par = Parallelism(tensor=8, pipeline=4, data=32)
    step = estimate_step(megatron(8, 32, 4), cluster(128), par, LLAMA70B, H100)
    assert all(step.by_dimension[dim] > 0 for dim in ("tensor", "pipeline", "data"))
    assert step.step_comm_seconds >= max(step.by_dimension.values())
