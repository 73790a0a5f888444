"""Draining nodes in maintenance from running plans (pure).

Theory of operation
-------------------
A node is *in maintenance* when it is cordoned (``spec.unschedulable``) or carries the taint
``fabricfit.dev/maintenance`` (:mod:`fabricfit.fabric.nodes`). Kubernetes leaves the pods of a
cordoned node running, but they will be drained, so a placed job's plan should not wait for
that: the pods planned on such a node are re-placed at once (:func:`drained`, then
:func:`~fabricfit.placement.replace.replace_pods`, which takes a spare of the same NVLink domain
first), before any pod moves. The new node is reserved in the job's status straight away, and
the pod the drain recreates (``kubectl drain``, or Kubernetes' own eviction for a ``NoExecute``
maintenance taint) is pinned there. fabricfit itself evicts nothing.

Until a drained pod has moved it runs on the old node while the plan names the new one: a
:class:`Move` (:func:`waiting_moves`). ``Degraded`` reports those ranks, and ``Placed`` waits for
them instead of calling them off plan. :func:`pending_holds` is what a re-placement must count as
taken besides other plans' reservations: the job's own planned pods that are not yet bound where
the plan puts them (the snapshot counts only bound pods), so two drained pods never get the same
spare.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from fabricfit.fabric.topology import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class Move:
    """Pod ``index`` still runs on ``source`` (in maintenance); the plan has it on ``target``."""

    index: int
    source: str
    target: str


def in_maintenance(snapshot: ClusterSnapshot, node: str) -> bool:
    """Whether ``node`` is in the snapshot and cordoned or tainted for maintenance."""
    return snapshot.has_node(node) and snapshot.node(node).maintenance


def drained(plan: Sequence[str], snapshot: ClusterSnapshot) -> tuple[int, ...]:
    """The pod indices of ``plan`` whose planned node is in maintenance."""
    return tuple(i for i, node in enumerate(plan) if in_maintenance(snapshot, node))


def waiting_moves(
    plan: Sequence[str], bound: Mapping[int, str], snapshot: ClusterSnapshot
) -> tuple[Move, ...]:
    """Pods bound to a node in maintenance that the plan has already moved elsewhere."""
    return tuple(
        Move(index=i, source=node, target=plan[i])
        for i, node in sorted(bound.items())
        if i < len(plan) and node != plan[i] and in_maintenance(snapshot, node)
    )


def pending_holds(
    plan: Sequence[str], bound: Mapping[int, str], lost: Iterable[int], gpus_per_pod: int
) -> dict[str, int]:
    """GPUs the job's own pods will take on their planned nodes but do not hold yet (not bound
    there), leaving out the ``lost`` pods about to be re-placed."""
    skip = set(lost)
    holds: Counter[str] = Counter()
    for index, node in enumerate(plan):
        if index not in skip and bound.get(index) != node:
            holds[node] += gpus_per_pod
    return dict(holds)
