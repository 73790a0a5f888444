"""Operator-wide configuration and mutable state shared by the handlers (kopf ``memo``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fabricfit.fabric.profiles import DEFAULT_PROFILE
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube.rest import Rest
from fabricfit.reconcile.inventory import Holding, Ledger, TopologyKey


@dataclass(frozen=True)
class OperatorConfig:
    """Settings of one operator process (from ``fabricfit run`` flags / Helm values)."""

    default_fabric: str = DEFAULT_PROFILE
    label_scheme: str = "auto"
    resync_seconds: float = 10.0
    namespaces: tuple[str, ...] = ()  # empty: all namespaces


@dataclass
class Views:
    """Read-only views of kopf's indexes at the time of a handler call."""

    nodes: list[Mapping[str, Any]]
    pods: list[Mapping[str, Any]]
    topologies: Mapping[TopologyKey, Holding]


@dataclass
class OperatorState:
    config: OperatorConfig
    rest: Rest
    ledger: Ledger = field(default_factory=Ledger)
    # Planning is serialised cluster-wide: two plans must never read the same free GPUs.
    plan_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    object_locks: dict[TopologyKey, asyncio.Lock] = field(default_factory=dict)
    # Recent snapshots per label scheme, for the read-only paths (health of running jobs);
    # planning always builds a fresh one under the lock.
    snapshots: dict[str, tuple[float, ClusterSnapshot]] = field(default_factory=dict)
    # Per waiting TrainingTopology, the fingerprint of the inputs its last plan did not fit in.
    infeasible: dict[TopologyKey, int] = field(default_factory=dict)

    def lock_for(self, key: TopologyKey) -> asyncio.Lock:
        return self.object_locks.setdefault(key, asyncio.Lock())
