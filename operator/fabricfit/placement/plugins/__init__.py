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
from fabricfit.placement.plugins.tensor_domain import TensorDomain

DEFAULT_PLUGINS: tuple[Plugin, ...] = (
    CommunicationTime(),
    TensorDomain(),
    DataLocality(),
    Fragmentation(),
    PipelineSpread(),
    NeighbourImpact(),
)
REGISTRY: Mapping[str, Plugin] = MappingProxyType({p.name: p for p in DEFAULT_PLUGINS})

__all__ = ["DEFAULT_PLUGINS", "REGISTRY", "Evaluated", "PlanContext", "Plugin"]
