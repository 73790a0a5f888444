"""Pydantic models of ``spec.serving``: a TrainingTopology that serves a model (pure).

A TrainingTopology without ``serving`` is a training job, priced per training step. With it,
the same parallelism describes an inference deployment priced per token
(:mod:`fabricfit.cost.serving`): ``parallelism.data`` counts the data-parallel serving ranks
(independent replicas unless expert parallelism joins them), ``tensor``, ``pipeline`` and
``expert`` split one replica. ``role`` says which phases the pods run: both (``replica``),
only the prefill or only the decode of a disaggregated deployment, whose two TrainingTopologies
name each other's through ``pairedWith``. Cross-field rules are CEL in ``rules.py``, as for the
rest of the spec.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from fabricfit.api.base import SpecModel
from fabricfit.api.rules import SERVING_RULES, SERVING_TARGET_RULES

#: A TrainingTopology's name: a DNS subdomain (RFC 1123), as metadata.name.
TOPOLOGY_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
MAX_BATCH = 65_536
MAX_TOKENS = 16_777_216
# An hour per token is no latency target; 1 µs is below any collective's latency.
MIN_TARGET_SECONDS = 1e-6
MAX_TARGET_SECONDS = 3600.0

Role = Literal["replica", "prefill", "decode"]
Spread = Literal["None", "RailGroup", "Spine", "Rack"]
ROLES: tuple[Role, ...] = ("replica", "prefill", "decode")
#: The roles of a disaggregated deployment, each the other's partner.
PARTNER_ROLE: dict[str, Role] = {"prefill": "decode", "decode": "prefill"}


class ServingTargets(SpecModel):
    """Latency targets; the operator says when communication alone exceeds one (condition
    ``LatencyTarget``)."""

    model_config = ConfigDict(json_schema_extra=SERVING_TARGET_RULES)

    time_per_output_token_seconds: float | None = Field(
        default=None,
        ge=MIN_TARGET_SECONDS,
        le=MAX_TARGET_SECONDS,
        description="Target time per output token (TPOT), seconds; compared with the "
        "predicted communication of one decode step.",
    )
    time_to_first_token_seconds: float | None = Field(
        default=None,
        ge=MIN_TARGET_SECONDS,
        le=MAX_TARGET_SECONDS,
        description="Target time to first token (TTFT), seconds; compared with the predicted "
        "communication of a prefill plus the KV-cache transfer.",
    )


class ServingSpec(SpecModel):
    """How the job serves a model: its role, the batch and prompt figures that size the
    messages, its partner in a disaggregated deployment, replica spreading and targets."""

    model_config = ConfigDict(json_schema_extra=SERVING_RULES)

    role: Role = Field(
        default="replica",
        description="replica: every replica runs prefill and decode; prefill or decode: one "
        "side of a disaggregated deployment.",
    )
    decode_batch: int = Field(
        ge=1,
        le=MAX_BATCH,
        description="Sequences one data-parallel rank decodes per step (one output token each).",
    )
    prompt_tokens: int = Field(
        ge=1, le=MAX_TOKENS, description="Prompt length of a request, tokens (prefill size)."
    )
    prefill_batch: int = Field(
        default=1, ge=1, le=MAX_BATCH, description="Requests prefilled together per step."
    )
    paired_with: str | None = Field(
        default=None,
        max_length=253,
        pattern=TOPOLOGY_NAME_PATTERN,
        description="The other role's TrainingTopology in the same namespace (prefill and "
        "decode name each other); the one planned second keeps its replicas where the "
        "KV-cache transfer from its partner is cheap.",
    )
    spread: Spread = Field(
        default="None",
        description="Spread replicas over this tier's domains for availability (None, "
        "RailGroup, Spine or Rack); each replica stays packed.",
    )
    targets: ServingTargets | None = Field(default=None, description="Latency targets.")
