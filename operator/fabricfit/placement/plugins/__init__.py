"""Scoring plugins and their registry (one concern per module; see ``base`` for the contract)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fabricfit.placement.plugins.base import Evaluated, PlanContext, Plugin
from fabricfit.placement.plugins.communication import CommunicationTime
from fabricfit.placement.plugins.data_locality import DataLocality
from fabricfit.placement.plugins.fragmentation import Fragmentation
from fabricfit.placement.plugins.neighbour_impact import NeighbourImpact
from fabricfit.placement.plugins.pipeline_spread import PipelineSpread
from fabricfit.placement.plugins.replica_spread import ReplicaSpread
from fabricfit.placement.plugins.tensor_domain import TensorDomain
from fabricfit.placement.request import PlacementRequest

DEFAULT_PLUGINS: tuple[Plugin, ...] = (
    CommunicationTime(),
    TensorDomain(),
    DataLocality(),
    Fragmentation(),
    PipelineSpread(),
    NeighbourImpact(),
)
#: A served model's plugins: the same, and its replicas' spread (a training plan's scores, and
#: so its choice, stay as they were).
SERVING_PLUGINS: tuple[Plugin, ...] = (*DEFAULT_PLUGINS, ReplicaSpread())
REGISTRY: Mapping[str, Plugin] = MappingProxyType({p.name: p for p in SERVING_PLUGINS})


def plugins_for(request: PlacementRequest) -> tuple[Plugin, ...]:
    return SERVING_PLUGINS if request.serving is not None else DEFAULT_PLUGINS


__all__ = [
    "DEFAULT_PLUGINS",
    "REGISTRY",
    "SERVING_PLUGINS",
    "Evaluated",
    "PlanContext",
    "Plugin",
    "plugins_for",
]
