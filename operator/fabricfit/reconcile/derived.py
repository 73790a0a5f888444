"""What the reconcile derives from the nodes' facts alone, computed once while they hold.

The fabric a job is priced on, the tier label keys, the ``TopologyDetected`` condition and the
static part of a plan's inputs fingerprint read every node of the cluster (tens of milliseconds
at 12,800 nodes) but none of them depends on the GPUs in use, which is what changes from one
plan to the next. A snapshot's ``facts_token`` stays the same object exactly while every node's
facts do (``fabric.snapshot.FactsMemo``), so each value is kept until the token changes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from fabricfit.fabric.topology import ClusterSnapshot

T = TypeVar("T")


class PerFacts:
    """Values computed from one snapshot's node facts, by key, dropped when they change."""

    def __init__(self) -> None:
        self._token: object = None
        self._values: dict[Hashable, Any] = {}

    def get(self, snapshot: ClusterSnapshot, key: Hashable, compute: Callable[[], T]) -> T:
        """``compute()`` once per facts token and ``key``."""
        if snapshot.facts_token is not self._token:
            self._token, self._values = snapshot.facts_token, {}
        if key not in self._values:
            self._values[key] = compute()
        value: T = self._values[key]
        return value
