"""``Placed`` as soon as the last pod of a plan is bound, not on the next resync.

kube-scheduler binds a pinned pod after fabricfit removed its gate; nothing about the
TrainingTopology changes then, so without help ``Placed`` waits for the resync timer (at scale,
behind hundreds of queued resyncs: tens of seconds). A kopf index groups the labelled pods by
their TrainingTopology (bound or not), so a pod event can tell in O(pods of that job) that the
plan's last pod was just bound and reconcile that one TrainingTopology at once. Each plan
triggers this once; a later change (a pod recreated, a new plan) arms it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.reconcile.inventory import Holding, TopologyKey

TERMINAL = frozenset({"Succeeded", "Failed"})


def job_pod_entry(body: Mapping[str, Any]) -> dict[TopologyKey, tuple[str, bool]] | None:
    """The index entry of a labelled pod: (namespace, topology) -> (pod name, bound?)."""
    meta = body.get("metadata") or {}
    owner = (meta.get("labels") or {}).get(TOPOLOGY_LABEL)
    if not owner:
        return None
    phase = (body.get("status") or {}).get("phase")
    bound = bool((body.get("spec") or {}).get("nodeName")) and phase not in TERMINAL
    return {(str(meta.get("namespace") or ""), str(owner)): (str(meta.get("name")), bound)}


def bound_count(entries: Iterable[tuple[str, bool]]) -> int:
    return sum(1 for _name, bound in entries if bound)


@dataclass
class PlacedTrigger:
    """Which plans already had their "last pod bound" reconcile."""

    announced: dict[TopologyKey, tuple[str, ...]] = field(default_factory=dict)

    def due(
        self,
        pod: Mapping[str, Any],
        holding: Holding | None,
        job_pods: Mapping[TopologyKey, Iterable[tuple[str, bool]]],
    ) -> TopologyKey | None:
        """The TrainingTopology to reconcile now, or None."""
        entry = job_pod_entry(pod)
        if entry is None or holding is None or not holding.plan.pods:
            return None
        ((key, (_name, bound)),) = entry.items()
        if not bound or self.announced.get(key) == holding.plan.pods:
            return None
        if bound_count(job_pods.get(key) or ()) < len(holding.plan.pods):
            return None
        self.announced[key] = holding.plan.pods
        return key

    def forget(self, key: TopologyKey) -> None:
        self.announced.pop(key, None)
