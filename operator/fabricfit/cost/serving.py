"""What serving a model communicates, per token and per request, and its price on a placement.

Theory of operation
-------------------
A served model does not train: no gradient all-reduce, so the data-parallel ranks are replicas
that never talk (unless expert parallelism joins them). What its placement decides is the
latency of the collectives *inside* a replica, on the path of every token. For a transformer of
L layers, hidden size h, β bytes per element, split t (tensor) × p (pipeline) × e (expert,
carved out of data), a step over ``n`` tokens per data-parallel rank issues, on the critical
path of one token:

* tensor: 2 all-reduces per layer of n·h·β bytes — Megatron-style tensor parallelism reduces
  after the attention block's output projection and after the MLP's down projection (Shoeybi et
  al. 2019, arXiv:1909.08053 §3, the ``g`` operator; vLLM's ``RowParallelLinear`` all-reduces
  its output, ``vllm-project/vllm`` ``vllm/model_executor/layers/linear.py``), for all L layers:
  a token crosses every pipeline stage in turn, so their all-reduces add up;
* expert (MoE, every layer an MoE layer, as for training): a dispatch and a combine all-to-all
  per layer, each rank sending its ⌈n/t⌉ tokens × top-k × h·β bytes (the training model's
  convention, :mod:`fabricfit.cost.volumes`: tokens split over the tensor-parallel ranks);
* pipeline: one activation send per stage boundary, p − 1 in turn, of n·h·β/t bytes (the
  scatter/gather optimisation, Narayanan et al. SC'21 §4.1), priced on the chain's slowest pair.

A *decode step* is that with n = ``decodeBatch`` (one output token for each sequence): the
messages are small, so the α term, NCCL's LL/LL128 protocols and NVLS in-switch reduction decide
the time, which the collective model (:mod:`fabricfit.cost.algorithms`) prices. A *prefill* is
that with n = ``promptTokens`` × ``prefillBatch``. Which phases a TrainingTopology runs follows
its role: ``replica`` both, ``prefill`` and ``decode`` one each.

A disaggregated deployment moves each request's KV cache from a prefill to a decode replica:
``promptTokens`` × 2 (K and V) × L × kv heads × head dimension × β bytes (the size vLLM allocates
per token: ``vllm/v1/kv_cache_interface.py``, ``AttentionSpec.page_size_bytes``, K and V pages
of ``num_kv_heads × head_size`` per layer; the transfer DistServe, Zhong et al. OSDI'24,
arXiv:2401.09670, and Splitwise, Patel et al. ISCA'24, arXiv:2311.18677, place next to their
prefill and decode instances). The cache of one request is sharded over the t·p ranks of its
replica (heads over tensor ranks, layers over stages); the transfer cuts it into
max(t_p·p_p, t_d·p_d) shards, shard j going from prefill rank j mod t_p·p_p to decode rank
j mod t_d·p_d of the paired replicas, priced as point-to-point over the links the two placements
give each pair (:func:`fabricfit.cost.step.pair_transfers`: same node, NVLink domain, one leaf
hop on the same rail, or above the leaf). Replica u of one side pairs with replica u mod U of
the other (the side with more replicas wraps), every pair moving a request's cache at once: the
contended case of a loaded deployment.

The placement's objective (``step_comm_seconds``) is the communication on the path to a first
token that the role's pods carry: prefill + KV transfer + one decode step, each phase counted
when the role runs it. Times add without overlap, as the training model's do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.api.serving import ServingSpec
from fabricfit.cost.bounds import BoundJob, Hardware, calls_lower_bound, transfer_lower_bound
from fabricfit.cost.collectives import Collective
from fabricfit.cost.step import estimate_calls, pair_transfers
from fabricfit.cost.volumes import DIMENSIONS, Call, StepCommEstimate
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import GpuSlot

__all__ = [
    "KvTransfer",
    "ServedJob",
    "ServingCommEstimate",
    "decode_calls",
    "estimate_serving",
    "kv_bytes_per_request",
    "kv_bytes_per_token",
    "kv_shard_pairs",
    "prefill_calls",
    "serving_lower_bound",
    "token_calls",
]

Calls = Mapping[str, tuple[Call, ...]]
RankGroups = Sequence[Sequence[int]]


@dataclass(frozen=True, slots=True)
class ServedJob:
    """What sizes a served model's messages: its split, its model and its serving figures."""

    parallelism: Parallelism
    model: ModelShape
    serving: ServingSpec


@dataclass(frozen=True, slots=True)
class KvTransfer:
    """The KV-cache transfer of a disaggregated deployment, located: ``pairs`` are (sender,
    receiver) indices into the slots it is priced on, each carrying ``shard_bytes``."""

    pairs: tuple[tuple[int, int], ...]
    shard_bytes: int


@dataclass(frozen=True, slots=True)
class ServingCommEstimate:
    """Per-phase communication of a served model on one placement (None: the role does not
    run the phase, or no partner is placed for a KV transfer)."""

    decode: StepCommEstimate | None
    prefill: StepCommEstimate | None
    kv_transfer_seconds: float | None
    kv_spine_bytes: float = 0.0

    @property
    def by_dimension(self) -> dict[str, float]:
        """Decode plus prefill seconds per parallelism dimension."""
        phases = [p for p in (self.decode, self.prefill) if p is not None]
        return {d: sum(p.by_dimension.get(d, 0.0) for p in phases) for d in DIMENSIONS}

    @property
    def comm_seconds(self) -> float:
        """The objective: communication on the path to a first token (module docstring)."""
        phases = [p.step_comm_seconds for p in (self.decode, self.prefill) if p is not None]
        return sum(phases) + (self.kv_transfer_seconds or 0.0)

    @property
    def spine_bytes(self) -> float:
        phases = [p.spine_bytes_per_step for p in (self.decode, self.prefill) if p is not None]
        return sum(phases) + self.kv_spine_bytes


def token_calls(parallelism: Parallelism, model: ModelShape, tokens: int) -> Calls:
    """Per dimension, the collectives one step over ``tokens`` tokens per data-parallel rank
    issues on each group, on the critical path of a token (module docstring)."""
    t, e, p = parallelism.tensor, parallelism.expert, parallelism.pipeline
    hidden, beta, layers = model.hidden_size, model.bytes_per_element, model.layers
    act = tokens * hidden * beta
    calls: dict[str, tuple[Call, ...]] = {dim: () for dim in DIMENSIONS}
    if t > 1:
        calls["tensor"] = (Call(Collective.ALL_REDUCE, act, 2 * layers),)
    if e > 1 and model.experts > 0 and model.top_k > 0:
        routed = max(1, -(-tokens // t)) * min(model.top_k, model.experts) * hidden * beta
        calls["expert"] = (Call(Collective.ALL_TO_ALL, routed, 2 * layers),)
    if p > 1:
        calls["pipeline"] = (Call(Collective.SEND_RECV, max(1, act // t), p - 1),)
    return calls


def decode_calls(parallelism: Parallelism, model: ModelShape, serving: ServingSpec) -> Calls:
    """One decode step: an output token for each of ``decodeBatch`` sequences."""
    return token_calls(parallelism, model, serving.decode_batch)


def prefill_calls(parallelism: Parallelism, model: ModelShape, serving: ServingSpec) -> Calls:
    """One prefill: ``promptTokens`` × ``prefillBatch`` tokens."""
    return token_calls(parallelism, model, serving.prompt_tokens * serving.prefill_batch)


def runs_decode(serving: ServingSpec) -> bool:
    return serving.role in ("replica", "decode")


def runs_prefill(serving: ServingSpec) -> bool:
    return serving.role in ("replica", "prefill")


def kv_bytes_per_token(model: ModelShape) -> int:
    """K and V of every layer: 2 · L · kv heads · head dimension · β."""
    return 2 * model.layers * model.key_value_heads * model.head_dimension * model.bytes_per_element


def kv_bytes_per_request(model: ModelShape, serving: ServingSpec) -> int:
    return serving.prompt_tokens * kv_bytes_per_token(model)


def kv_shard_pairs(
    senders: Sequence[Sequence[int]], receivers: Sequence[Sequence[int]]
) -> list[tuple[int, int]]:
    """(sender rank, receiver rank) of every shard: replica u of one side with replica
    u mod U of the other, shard j of a pair from sender rank j mod |s| to receiver j mod |r|
    (ranks in their given order). Empty when either side has no replica."""
    if not senders or not receivers:
        return []
    pairs: list[tuple[int, int]] = []
    for u in range(max(len(senders), len(receivers))):
        sent, got = senders[u % len(senders)], receivers[u % len(receivers)]
        shards = max(len(sent), len(got))
        pairs.extend((sent[j % len(sent)], got[j % len(got)]) for j in range(shards))
    return pairs


def shard_bytes(model: ModelShape, serving: ServingSpec, ranks_here: int, ranks_there: int) -> int:
    """Bytes of one shard of a request's KV cache between replicas of these sizes."""
    shards = max(1, ranks_here, ranks_there)
    return max(1, -(-kv_bytes_per_request(model, serving) // shards))


def estimate_serving(
    job: ServedJob,
    groups: Mapping[str, RankGroups],
    slots: Sequence[GpuSlot],
    profile: FabricProfile,
    kv: tuple[KvTransfer, Sequence[GpuSlot]] | None = None,
) -> ServingCommEstimate:
    """Per-phase communication of this placement; ``kv`` the located KV transfer (its pairs
    index the slots given with it, this job's and its partner's)."""
    parallelism, model, serving = job.parallelism, job.model, job.serving
    decode = prefill = None
    if runs_decode(serving):
        decode = estimate_calls(decode_calls(parallelism, model, serving), groups, slots, profile)
    if runs_prefill(serving):
        calls = prefill_calls(parallelism, model, serving)
        prefill = estimate_calls(calls, groups, slots, profile)
    if kv is None or not kv[0].pairs:
        return ServingCommEstimate(decode, prefill, None)
    transfer, located = kv
    call = (Call(Collective.SEND_RECV, transfer.shard_bytes, 1),)
    seconds, spine = pair_transfers(call, transfer.pairs, located, profile)
    return ServingCommEstimate(decode, prefill, seconds, spine)


def serving_lower_bound(
    job: ServedJob,
    profile: FabricProfile,
    bound_job: BoundJob,
    *,
    hardware: Hardware | None = None,
    kv_shard_bytes: int | None = None,
) -> ServingCommEstimate:
    """What no placement can beat, phase by phase (:func:`fabricfit.cost.bounds
    .calls_lower_bound` on the token's calls; the KV transfer at its cheapest pair)."""
    parallelism, model, serving = job.parallelism, job.model, job.serving

    def bound(calls: Calls) -> StepCommEstimate:
        return calls_lower_bound(calls, bound_job, profile, hardware=hardware)

    decode = bound(decode_calls(parallelism, model, serving)) if runs_decode(serving) else None
    prefill = bound(prefill_calls(parallelism, model, serving)) if runs_prefill(serving) else None
    kv = None
    if kv_shard_bytes is not None:
        kv = transfer_lower_bound((Call(Collective.SEND_RECV, kv_shard_bytes, 1),), profile)
    return ServingCommEstimate(decode, prefill, kv)
