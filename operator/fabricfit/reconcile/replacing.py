"""Re-placing pods of a plan that lost their node, or that kube-scheduler cannot bind because
something else took their node's GPUs, under the planning lock (as ``planning`` plans).

The rest of the job stays where it runs: only the lost or stuck pods move, spares of the same
NVLink domain first (``placement.replace``), and the new plan is written before any of them is
pinned. The job's own planned pods not yet bound count as taken (``pending_holds``), so two
moved pods never get one node's last GPUs.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fabricfit.fabric.pods import TERMINAL_PHASES, pod_gpu_request
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.constraints import node_rejection
from fabricfit.placement.maintenance import pending_holds
from fabricfit.placement.replace import Replacement, replace_pods
from fabricfit.placement.request import PlacementRequest
from fabricfit.reconcile.applying import bound_pods
from fabricfit.reconcile.context import Run, Target
from fabricfit.reconcile.planning import plan_inputs, write_status
from fabricfit.render.record import plan_fields


async def replace_and_reserve(
    run: Run, target: Target, current: Sequence[str], lost: set[int]
) -> Replacement | None:
    """Move lost pods to healthy nodes and record the new plan before any of them is pinned.
    Besides other plans' holds, the job's own planned pods not yet bound there count as taken
    (``pending_holds``), so two lost pods never get one node's last GPUs."""
    async with run.state.plan_lock:
        return await _replace(run, target, current, lost, plan_inputs(run, target))


async def replace_stuck(
    run: Run, target: Target, current: Sequence[str], stuck: Iterable[int]
) -> Replacement | None:
    """Re-place the pinned pods kube-scheduler calls Unschedulable whose planned node cannot
    take them now, checked under the lock on a fresh snapshot: its free GPUs (pods fabricfit
    does not place included) after other plans' holds and the job's own pending pods. GPUs of
    pods being deleted count as free (a pod waiting for its own predecessor to go is not
    moved). None when every stuck pod still fits (kube-scheduler retries it) or one fits
    nowhere (it waits)."""
    async with run.state.plan_lock:
        inputs = plan_inputs(run, target)
        snapshot, request, _, held = inputs
        order = sorted(set(stuck))
        own = pending_holds(current, bound_pods(target), order, target.spec.gpus_per_pod)
        taken = Counter(held) + Counter(own)
        taken.subtract(releasing_gpus(run.views_of().pods, snapshot.claimed_by_pod))
        lost: set[int] = set()
        for index in order:
            node = current[index]
            fits = snapshot.has_node(node) and not node_rejection(
                snapshot.node(node), request, taken
            )
            if fits:
                taken[node] += target.spec.gpus_per_pod  # it stays: the next one sees it there
            else:
                lost.add(index)
        if not lost:
            return None
        return await _replace(run, target, current, lost, inputs)


def releasing_gpus(
    pods: Iterable[Mapping[str, Any]], claimed: Mapping[tuple[str, str], int]
) -> dict[str, int]:
    """GPUs per node held by bound pods that are being deleted: they free without anyone's
    help, so a pod waiting for them is not stuck."""
    freed: Counter[str] = Counter()
    for pod in pods:
        meta = pod.get("metadata") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or not meta.get("deletionTimestamp"):
            continue
        if (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        freed[str(node)] += pod_gpu_request(pod, []) + claimed.get(key, 0)
    return dict(freed)


async def _replace(
    run: Run,
    target: Target,
    current: Sequence[str],
    lost: set[int],
    inputs: tuple[ClusterSnapshot, PlacementRequest, FabricProfile, dict[str, int]],
) -> Replacement | None:
    """Re-place ``lost`` (under the planning lock, which the caller holds) and write it."""
    snapshot, request, profile, held = inputs
    own = pending_holds(current, bound_pods(target), lost, target.spec.gpus_per_pod)
    taken = dict(Counter(held) + Counter(own))
    replacement = await asyncio.to_thread(
        replace_pods, snapshot, request, profile, current, lost, reservations=taken
    )
    if replacement is None:
        return None
    run.draft.set(**plan_fields(replacement, target.spec.gpus_per_pod))
    await write_status(run)
    return replacement
