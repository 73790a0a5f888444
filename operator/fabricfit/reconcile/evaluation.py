"""Reading back what the cluster did: Placed and Degraded from pods and nodes.

``Placed`` is True when every pod of the workload is bound (``spec.nodeName``) to its planned
node — what kube-scheduler did, not what fabricfit intended. ``Degraded`` is True when a node of
the plan is NotReady, cordoned, tainted away or gone (``NodeUnavailable``), or when pods still
run on a node in maintenance that the plan has already drained (``NodeMaintenance``: the ranks
wait for their pods to be evicted; ``Placed`` waits for them rather than calling them off plan);
its message and ``degradedRanks`` name the global ranks concerned. ``Placed=False``, reason
``PodsUnschedulable``, names pinned pods kube-scheduler cannot bind on their planned node
(something fabricfit does not place took its GPUs) and where the plan moved them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.maintenance import Move, waiting_moves
from fabricfit.reconcile.applying import bound_pods, stuck_pods
from fabricfit.reconcile.context import Target
from fabricfit.reconcile.draft import StatusDraft
from fabricfit.render.pods import planned_node_of
from fabricfit.render.workload import PINNING_MODES

MAX_LISTED = 8


def is_pinned_or_bound(pod: Mapping[str, Any]) -> bool:
    """Whether the pod has started on its plan: bound, or pinned to its node. A device-exact
    plan pins a pod before its claim is allocated and lifts the gate after (reconcile.devices),
    so a pinned pod counts whether or not it is still gated: its plan is kept."""
    return bool((pod.get("spec") or {}).get("nodeName")) or planned_node_of(pod) is not None


def _node_problem(snapshot: ClusterSnapshot, node: str) -> str | None:
    if not snapshot.has_node(node):
        return "deleted"
    info = snapshot.node(node)
    if info.available:
        return None
    return info.unavailable_reason or "unavailable"


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


def _pod_ranks(index: int, gpus_per_pod: int) -> range:
    return range(index * gpus_per_pod, (index + 1) * gpus_per_pod)


def _describe_moves(moves: Sequence[Move], snapshot: ClusterSnapshot, gpus_per_pod: int) -> str:
    parts = []
    for move in moves:
        ranks = _pod_ranks(move.index, gpus_per_pod)
        source = snapshot.node(move.source)
        same = (
            snapshot.has_node(move.target)
            and snapshot.node(move.target).place.nvlink_domain == source.place.nvlink_domain
        )
        where = "the same NVLink domain" if same else "another NVLink domain"
        parts.append(
            f"ranks {ranks[0]}..{ranks[-1]} (pod {move.index}) on {move.source} "
            f"({source.unavailable_reason or 'maintenance'}) re-placed to {move.target} "
            f"({where})"
        )
    return (
        f"drained from the plan: {_listed(parts)}; they move there when their pods are evicted "
        "(kubectl drain, or a NoExecute maintenance taint)"
    )


def _describe_stuck(
    stuck: Mapping[int, tuple[str, Any]], plan: Sequence[str], gpus_per_pod: int
) -> str:
    parts = []
    for index, (node, _) in sorted(stuck.items()):
        ranks = _pod_ranks(index, gpus_per_pod)
        where = plan[index] if index < len(plan) else node
        fate = (
            f"re-placed to {where}, its pod recreated there"
            if where != node
            else "kept there while that node can still take it or no other node can"
        )
        parts.append(f"pod {index} (ranks {ranks[0]}..{ranks[-1]}) on {node}: {fate}")
    return (
        "kube-scheduler cannot bind pinned pods on their planned node (pods fabricfit does not "
        f"place may hold its GPUs): {_listed(parts)}"
    )


def evaluate_degraded(
    draft: StatusDraft,
    spec: TrainingTopologySpec,
    plan: Sequence[str],
    snapshot: ClusterSnapshot,
    bound: Mapping[int, str] | None = None,
) -> None:
    problems: dict[str, str] = {}
    ranks: list[int] = []
    for index, node in enumerate(plan):
        problem = _node_problem(snapshot, node)
        if problem is not None:
            problems[node] = problem
            ranks.extend(_pod_ranks(index, spec.gpus_per_pod))
    moves = waiting_moves(plan, bound or {}, snapshot)
    moving = [r for m in moves for r in _pod_ranks(m.index, spec.gpus_per_pod)]
    drain = _describe_moves(moves, snapshot, spec.gpus_per_pod) if moves else ""
    if problems:
        nodes = [f"{n} ({p})" for n, p in sorted(problems.items())]
        draft.condition(
            Reason.NODE_UNAVAILABLE,
            f"planned nodes {_listed(nodes)} host ranks {ranks[0]}..{ranks[-1]} "
            f"({len(ranks)} ranks)" + (f"; {drain}" if drain else ""),
        )
        draft.set(degradedRanks=sorted({*ranks, *moving})[:4096])
    elif moves:
        draft.condition(Reason.NODE_MAINTENANCE, drain)
        draft.set(degradedRanks=moving[:4096])
    else:
        draft.condition(Reason.NODES_HEALTHY, "every planned node is Ready and schedulable")
        draft.set(degradedRanks=[])


def evaluate(
    draft: StatusDraft, target: Target, plan: Sequence[str], snapshot: ClusterSnapshot
) -> None:
    """Set ``Degraded`` and ``Placed`` from what the pods and nodes show (see the module doc)."""
    spec = target.spec
    bound = bound_pods(target)
    # Only pinned plans are drained (service._pin), so only they have pods waiting to move.
    drainable = bound if spec.placement.mode == "pinned" else {}
    evaluate_degraded(draft, spec, plan, snapshot, drainable)
    draining = {m.index for m in waiting_moves(plan, drainable, snapshot)}
    if spec.placement.mode == "advisory":
        draft.condition(Reason.ADVISORY, "advisory mode: the plan is reported, not applied")
        return
    misplaced = [
        f"pod {i} on {n} (planned {plan[i]})"
        for i, n in sorted(bound.items())
        if i < len(plan) and n != plan[i] and i not in draining
    ]
    on_plan = sum(1 for i, n in bound.items() if i < len(plan) and n == plan[i])
    if on_plan == len(plan):
        draft.condition(
            Reason.ALL_PODS_BOUND,
            f"all {len(plan)} pods are bound to their planned nodes",
        )
    elif misplaced and spec.placement.mode in PINNING_MODES:
        draft.condition(
            Reason.PODS_OFF_PLAN,
            f"{len(misplaced)} pods run off plan: {_listed(misplaced)}",
        )
    elif spec.placement.mode in PINNING_MODES and (stuck := stuck_pods(target)):
        draft.condition(Reason.PODS_UNSCHEDULABLE, _describe_stuck(stuck, plan, spec.gpus_per_pod))
    else:
        draft.condition(
            Reason.WAITING_FOR_PODS,
            f"{on_plan} of {len(plan)} pods bound to their planned nodes",
        )
