"""A served model priced per token: the calls of a decode step and a prefill, the KV-cache size
and its shard pairs, and the price of placements (NVLink vs the network, roles, the bound)."""

from __future__ import annotations

import pytest

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.api.serving import ServingSpec
from fabricfit.cost.bounds import BoundJob
from fabricfit.cost.collectives import Collective, estimate_shape
from fabricfit.cost.serving import (
    KvTransfer,
    ServedJob,
    decode_calls,
    estimate_serving,
    kv_bytes_per_request,
    kv_bytes_per_token,
    kv_shard_pairs,
    prefill_calls,
    serving_lower_bound,
    shard_bytes,
)
from fabricfit.cost.shape import summarize_group
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import GpuSlot

H100 = get_profile("dgx-h100")
GB200 = get_profile("gb200-nvl72")
# Llama 3 70B: 80 layers, hidden 8192, 64 query heads, 8 key/value heads of 128.
LLAMA70B = ModelShape(hidden_size=8192, layers=80, attention_heads=64, kv_heads=8)
SERVE = ServingSpec(decode_batch=64, prompt_tokens=2048)


def node_slots(node: str, gpus: range, *, domain: str | None = None) -> list[GpuSlot]:
    return [GpuSlot(node, j, j, domain or node, "su0", "s0") for j in gpus]


def tp_groups(t: int, replicas: int) -> dict[str, list[list[int]]]:
    return {"tensor": [list(range(r * t, (r + 1) * t)) for r in range(replicas)]}


def test_decode_step_is_two_all_reduces_per_layer_of_batch_by_hidden() -> None:
    calls = decode_calls(Parallelism(tensor=8, data=2), LLAMA70B, SERVE)
    (tensor,) = calls["tensor"]
    assert (tensor.collective, tensor.size_bytes, tensor.count) == (
        Collective.ALL_REDUCE,
        64 * 8192 * 2,
        2 * 80,
    )
    assert calls["data"] == () and calls["context"] == () and calls["pipeline"] == ()


def test_prefill_sizes_messages_by_prompt_times_batch() -> None:
    serving = ServingSpec(decode_batch=1, prompt_tokens=1000, prefill_batch=3)
    (tensor,) = prefill_calls(Parallelism(tensor=2), LLAMA70B, serving)["tensor"]
    assert tensor.size_bytes == 3000 * 8192 * 2


def test_pipeline_sends_once_per_boundary_and_moe_dispatches_and_combines() -> None:
    moe = ModelShape(hidden_size=4096, layers=32, experts=8, top_k=2)
    calls = decode_calls(Parallelism(tensor=2, pipeline=4, data=4, expert=4), moe, SERVE)
    (pipeline,) = calls["pipeline"]
    assert (pipeline.collective, pipeline.count) == (Collective.SEND_RECV, 3)
    assert pipeline.size_bytes == 64 * 4096 * 2 // 2
    (expert,) = calls["expert"]
    assert (expert.collective, expert.count) == (Collective.ALL_TO_ALL, 2 * 32)
    assert expert.size_bytes == (64 // 2) * 2 * 4096 * 2


def test_kv_cache_per_token_of_llama_70b_is_320_kib() -> None:
    # 2 (K and V) x 80 layers x 8 kv heads x 128 x 2 bytes = 327,680 bytes per token.
    assert kv_bytes_per_token(LLAMA70B) == 327_680
    assert kv_bytes_per_request(LLAMA70B, SERVE) == 2048 * 327_680
    # Without the attention shape: multi-head attention, heads of 128.
    assert kv_bytes_per_token(ModelShape(hidden_size=4096, layers=32)) == 2 * 32 * 4096 * 2


def test_kv_shards_pair_replicas_round_robin() -> None:
    prefill = [[0, 1], [2, 3]]  # two replicas of two ranks
    decode = [[10, 11, 12, 13]]  # one replica of four
    assert kv_shard_pairs(prefill, decode) == [
        (0, 10), (1, 11), (0, 12), (1, 13),  # replica 0 -> decode replica 0
        (2, 10), (3, 11), (2, 12), (3, 13),  # replica 1 -> decode replica 0 (wraps)
    ]  # fmt: skip
    assert kv_shard_pairs([], decode) == []
    assert shard_bytes(LLAMA70B, SERVE, 2, 4) == -(-2048 * 327_680 // 4)


def test_tp8_inside_a_node_beats_tp8_over_two_nodes_per_token() -> None:
    job = ServedJob(Parallelism(tensor=8), LLAMA70B, SERVE)
    inside = estimate_serving(job, tp_groups(8, 1), node_slots("a", range(8)), H100)
    split = node_slots("a", range(4)) + node_slots("b", range(4))
    across = estimate_serving(job, tp_groups(8, 1), split, H100)
    assert inside.decode is not None and across.decode is not None
    assert across.decode.step_comm_seconds > 2 * inside.decode.step_comm_seconds
    assert inside.kv_transfer_seconds is None  # a replica moves no KV cache


def test_decode_messages_are_latency_bound_and_take_a_low_latency_protocol() -> None:
    (tensor,) = decode_calls(Parallelism(tensor=8), LLAMA70B, ServingSpec(
        decode_batch=1, prompt_tokens=1))["tensor"]  # fmt: skip
    shape = summarize_group(node_slots("a", range(8)))
    estimate = estimate_shape(tensor.collective, tensor.size_bytes, shape, H100)
    assert estimate.protocol in ("LL", "LL128") or estimate.algorithm.startswith("nvls")
    assert estimate.bottleneck == "latency"


@pytest.mark.parametrize(
    ("role", "decode", "prefill"),
    [("replica", True, True), ("prefill", False, True), ("decode", True, False)],
)
def test_a_role_prices_the_phases_it_runs(role: str, decode: bool, prefill: bool) -> None:
    serving = ServingSpec(decode_batch=8, prompt_tokens=512, role=role)  # type: ignore[arg-type]
    job = ServedJob(Parallelism(tensor=8), LLAMA70B, serving)
    found = estimate_serving(job, tp_groups(8, 1), node_slots("a", range(8)), H100)
    assert (found.decode is not None, found.prefill is not None) == (decode, prefill)
    phases = [p.step_comm_seconds for p in (found.decode, found.prefill) if p is not None]
    assert found.comm_seconds == pytest.approx(sum(phases))


def test_kv_transfer_over_nvlink_beats_one_across_the_spine() -> None:
    serving = ServingSpec(decode_batch=8, prompt_tokens=2048, role="decode")
    job = ServedJob(Parallelism(tensor=4), LLAMA70B, serving)
    here = node_slots("t0", range(4), domain="rack0")
    transfer = KvTransfer(tuple((4 + j, j) for j in range(4)), 2048 * 327_680 // 4)
    groups = tp_groups(4, 1)
    same_rack = estimate_serving(
        job, groups, here, GB200, (transfer, here + node_slots("t1", range(4), domain="rack0"))
    )
    far = [GpuSlot("u0", j, j, "rack9", "su9", "s9") for j in range(4)]
    other_spine = estimate_serving(job, groups, here, GB200, (transfer, here + far))
    assert same_rack.kv_transfer_seconds is not None and other_spine.kv_transfer_seconds
    assert other_spine.kv_transfer_seconds > 5 * same_rack.kv_transfer_seconds
    assert other_spine.kv_spine_bytes > 0 == same_rack.kv_spine_bytes


def test_lower_bound_never_exceeds_the_placements() -> None:
    job = ServedJob(Parallelism(tensor=8, data=2), LLAMA70B, SERVE)
    groups = tp_groups(8, 2)
    bound = serving_lower_bound(job, H100, BoundJob(16, 8, groups))
    for slots in (
        node_slots("a", range(8)) + node_slots("b", range(8)),
        node_slots("a", range(4)) + node_slots("b", range(4)) + node_slots("c", range(8)),
    ):
        found = estimate_serving(job, groups, slots, H100)
        assert bound.comm_seconds <= found.comm_seconds * (1 + 1e-12)
