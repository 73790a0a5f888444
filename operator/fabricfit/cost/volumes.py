"""What one training step communicates, per parallelism dimension (sizes and counts only).

Theory of operation
-------------------
For a dense or MoE transformer with b sequences per micro-batch, s tokens, hidden h, L layers,
β bytes per element, m micro-batches per step and P parameters, split t (tensor) × c (context) ×
e (expert, carved out of data) × d (data) × p (pipeline), one step issues per rank:

* tensor: 2 all-reduces forward + 2 backward per layer per micro-batch of b·(s/c)·h·β bytes
  (Narayanan et al. SC'21 §3.3; with sequence parallelism each becomes RS + AG of the same total
  volume, Korthikanti et al. 2205.05198, so the all-reduce count is kept), L/p layers per stage;
* context (ring attention; assumption, documented): each layer's forward all-gathers the K and V
  chunks around the CP ring, the backward gathers them again and reduce-scatters dK/dV, so 2 AG
  + 1 RS per layer per micro-batch of c × 2·b·(s/c)·h·β/t bytes (K and V heads split over TP;
  full multi-head attention assumed — grouped-query attention moves less);
* expert (MoE, every layer an MoE layer): dispatch and combine all-to-all forward and backward,
  4 per layer per micro-batch, each rank sending its b·s/(c·t) tokens × top-k × h·β bytes
  (DeepEP dispatch/combine semantics; sequence parallelism splits tokens over TP);
* data: gradients of Ψ = P/(t·p) parameters at β bytes: ZeRO-0 one all-reduce; ZeRO-1/2
  reduce-scatter + all-gather of the same 2Ψ volume; ZeRO-3/FSDP an all-gather forward and
  backward plus a reduce-scatter per layer (3Ψ, Rajbhandari et al. SC'20 §7);
* pipeline: per micro-batch per stage boundary an activation forward and a gradient backward of
  b·(s/c)·h·β/t bytes (scatter/gather optimisation, Narayanan §4.1); the busiest boundary sets
  the time.

Times per dimension are summed without overlap (an upper bound on exposed communication; the
placement only needs a consistent ordering between candidates).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.cost.collectives import Collective

DIMENSIONS = ("tensor", "context", "expert", "data", "pipeline")


@dataclass(frozen=True)
class StepCommEstimate:
    by_dimension: Mapping[str, float]  # seconds per step, keys exactly DIMENSIONS
    step_comm_seconds: float
    spine_bytes_per_step: float  # bytes per step crossing the spine tier


@dataclass(frozen=True)
class Call:
    """``count`` calls of one collective of ``size_bytes`` (nccl-tests size convention)."""

    collective: Collective
    size_bytes: int
    count: int


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def step_calls(parallelism: Parallelism, model: ModelShape | None) -> dict[str, tuple[Call, ...]]:
    """Per dimension, the collectives one step issues on each of its groups."""
    mdl = model if model is not None else ModelShape()
    t, c, e, d, p = (
        parallelism.tensor,
        parallelism.context,
        parallelism.expert,
        parallelism.data,
        parallelism.pipeline,
    )
    layers = _ceil_div(mdl.layers, p)
    per_layer = layers * mdl.micro_batches
    tokens = mdl.micro_batch_size * max(1, mdl.sequence_length // c)
    act = tokens * mdl.hidden_size * mdl.bytes_per_element
    calls: dict[str, tuple[Call, ...]] = {dim: () for dim in DIMENSIONS}
    if t > 1:
        calls["tensor"] = (Call(Collective.ALL_REDUCE, act, 4 * per_layer),)
    if c > 1:
        kv = c * 2 * act // t
        calls["context"] = (
            Call(Collective.ALL_GATHER, kv, 2 * per_layer),
            Call(Collective.REDUCE_SCATTER, kv, per_layer),
        )
    if e > 1 and mdl.experts > 0 and mdl.top_k > 0:
        routed = max(1, tokens // t) * min(mdl.top_k, mdl.experts) * mdl.hidden_size
        calls["expert"] = (
            Call(Collective.ALL_TO_ALL, routed * mdl.bytes_per_element, 4 * per_layer),
        )
    if d > 1:
        calls["data"] = _data_calls(mdl, t, p, layers)
    if p > 1:
        calls["pipeline"] = (Call(Collective.SEND_RECV, max(1, act // t), 2 * mdl.micro_batches),)
    return calls


def _data_calls(mdl: ModelShape, t: int, p: int, layers: int) -> tuple[Call, ...]:
    grad_bytes = max(1, mdl.parameters // (t * p)) * mdl.bytes_per_element
    if mdl.zero_stage == 0:
        return (Call(Collective.ALL_REDUCE, grad_bytes, 1),)
    if mdl.zero_stage in (1, 2):
        return (
            Call(Collective.REDUCE_SCATTER, grad_bytes, 1),
            Call(Collective.ALL_GATHER, grad_bytes, 1),
        )
    per_layer = max(1, grad_bytes // layers)
    return (
        Call(Collective.ALL_GATHER, per_layer, 2 * layers),
        Call(Collective.REDUCE_SCATTER, per_layer, layers),
    )
