"""What every status model shares: its base class (camelCase, frozen, unknown fields ignored
on read) and the bounds and patterns the CRD's status schema carries."""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic.config import JsonDict

from fabricfit.api.models import MAX_GPUS_PER_POD
from fabricfit.api.rules import MAX_PODS

MAX_CONDITIONS = 16
MAX_REASONS = 32
MAX_DEGRADED_RANKS = 4096
MAX_WORLD_SIZE = MAX_PODS * MAX_GPUS_PER_POD
MAX_SECONDS = 1e9
MAX_BYTES = float(2**53)  # 9 PB per step; the API server holds bounds as float64
# The API server reads bounds as float64: 2^63-1 is not representable, and it rejects status
# writes against such a schema ("Maximum boundary value must be of type integer").
MAX_GENERATION = 2**53 - 1
REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
# metav1.Condition.type: an optional DNS-subdomain prefix and "/", then a qualified name.
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
DATE_TIME: Final[JsonDict] = {"format": "date-time"}
# RFC 3339 as metav1.Time writes it; the pattern lets pydantic (and jsonschema without a format
# plugin) check what the API server checks through ``format: date-time``.
DATE_TIME_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"
)
NodeName = Annotated[str, Field(min_length=1, max_length=253, description="Name of the node.")]
ReasonText = Annotated[str, Field(max_length=1024, description="One reason, in plain words.")]
Rank = Annotated[int, Field(ge=0, le=MAX_WORLD_SIZE - 1, description="A global rank.")]
# What printer columns show people: a Go-style duration ("489ms", "1.2s") and a whole percent.
DURATION_PATTERN = r"^[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m|h)([0-9]+(\.[0-9]+)?(s|m))?$"
PERCENT_PATTERN = r"^[0-9]{1,3}%$"


def map_list(*keys: str) -> JsonDict:
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


class StatusModel(BaseModel):
    """Base for status models: camelCase aliases, frozen, unknown fields ignored on read."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore"
    )
