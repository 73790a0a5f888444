"""Reading back what the cluster did: Placed and Degraded from pods and nodes.

``Placed`` is True when every pod of the workload is bound (``spec.nodeName``) to its planned
node — what kube-scheduler did, not what fabricfit intended. ``Degraded`` is True when a node of
the plan is NotReady, cordoned, tainted away or gone; its message and ``degradedRanks`` name
the global ranks that live there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.reconcile.applying import pod_index_of
from fabricfit.reconcile.context import Target
from fabricfit.reconcile.draft import StatusDraft
from fabricfit.render.pods import is_gated, planned_node_of

MAX_LISTED = 8


def is_pinned_or_bound(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName")) or (
        not is_gated(pod) and planned_node_of(pod) is not None
    )


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


def evaluate_degraded(
    draft: StatusDraft, spec: TrainingTopologySpec, plan: Sequence[str], snapshot: ClusterSnapshot
) -> None:
    problems: dict[str, str] = {}
    ranks: list[int] = []
    for index, node in enumerate(plan):
        problem = _node_problem(snapshot, node)
        if problem is not None:
            problems[node] = problem
            start = index * spec.gpus_per_pod
            ranks.extend(range(start, start + spec.gpus_per_pod))
    if problems:
        nodes = [f"{n} ({p})" for n, p in sorted(problems.items())]
        draft.condition(
            Reason.NODE_UNAVAILABLE,
            f"planned nodes {_listed(nodes)} host ranks {ranks[0]}..{ranks[-1]} "
            f"({len(ranks)} ranks)",
        )
        draft.set(degradedRanks=ranks[:4096])
    else:
        draft.condition(Reason.NODES_HEALTHY, "every planned node is Ready and schedulable")
        draft.set(degradedRanks=[])


def evaluate(
    draft: StatusDraft, target: Target, plan: Sequence[str], snapshot: ClusterSnapshot
) -> None:
    """Set ``Degraded`` and ``Placed`` from what the pods and nodes show (see the module doc)."""
    spec = target.spec
    evaluate_degraded(draft, spec, plan, snapshot)
    bound: dict[int, str] = {}
    for pod in target.pods:
        if (pod.get("status") or {}).get("phase") in {"Succeeded", "Failed"}:
            continue
        index = pod_index_of(target, pod)
        node = (pod.get("spec") or {}).get("nodeName")
        if index is not None and node:
            bound[index] = node
    if spec.placement.mode == "advisory":
        draft.condition(Reason.ADVISORY, "advisory mode: the plan is reported, not applied")
        return
    misplaced = [
        f"pod {i} on {n} (planned {plan[i]})"
        for i, n in sorted(bound.items())
        if i < len(plan) and n != plan[i]
    ]
    on_plan = sum(1 for i, n in bound.items() if i < len(plan) and n == plan[i])
    if on_plan == len(plan):
        draft.condition(
            Reason.ALL_PODS_BOUND,
            f"all {len(plan)} pods are bound to their planned nodes",
        )
    elif misplaced and spec.placement.mode == "pinned":
        draft.condition(
            Reason.PODS_OFF_PLAN,
            f"{len(misplaced)} pods run off plan: {_listed(misplaced)}",
        )
    else:
        draft.condition(
            Reason.WAITING_FOR_PODS,
            f"{on_plan} of {len(plan)} pods bound to their planned nodes",
        )
