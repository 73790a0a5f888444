"""The operator's ``wait-if-faster``: run times from what Kueue Workloads declare, holds (pure).

Theory of operation
-------------------
The decision itself is :func:`fabricfit.placement.waiting.hold_until`, the one ``fabricfit
simulate`` replays. The operator has to supply what a trace gives the replay:

* **when running jobs end.** A job declares its run time with Kueue's
  ``kueue.x-k8s.io/max-exec-time-seconds`` label, which Kueue copies to its Workload's
  ``spec.maximumExecutionTimeSeconds`` and enforces: once the Workload has been admitted that
  long (its ``Admitted`` condition's time, less ``status.accumulatedPastExecutionTimeSeconds``
  from earlier admissions) Kueue deactivates it (kueue v0.19.2
  ``pkg/controller/jobframework/utils.go:186-203``, ``workload_controller.go:905-943``). So
  :func:`declared_end` is the latest the job can run; a job without the label never counts as
  ending (it is never waited for);
* **how long the job to place runs**: its own Workload's limit (:func:`declared_run_seconds`),
  its steps being that over its step time; a job that declares none is never held (the wait
  cannot be weighed);
* **the hold**, :class:`HeldPlacement`: the nodes the held job waits for and the GPUs that free
  up there by then, so that while it waits others start only beside it
  (:func:`beside_hold`: ``placement.waiting.room_beside``), unless they end first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.waiting import STRICT_FIFO, room_beside

#: A hold is honoured this long after the instant it waits for (the held job is re-checked at
#: Kueue's next requeue; a hold nobody re-checks must not fence nodes off for ever).
HOLD_GRACE_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class HeldPlacement:
    """A job held for a better placement: until ``until`` (seconds since the epoch), on
    ``reserved`` (GPUs per node), where ``freed`` GPUs per node come free by then."""

    until: float
    reserved: Mapping[str, int]
    freed: Mapping[str, int] = field(default_factory=dict)

    def current(self, now: float) -> bool:
        return now < self.until + HOLD_GRACE_SECONDS


def queue_policy(spec_policy: str | None, operator_default: str) -> str:
    """The job's queue policy: its spec's, else the operator's."""
    return spec_policy or operator_default or STRICT_FIFO


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def declared_run_seconds(workload: Mapping[str, Any]) -> float | None:
    """What is left of the run time a Workload declares (``spec.maximumExecutionTimeSeconds``
    less the admitted time already spent); None when it declares none."""
    limit = _positive((workload.get("spec") or {}).get("maximumExecutionTimeSeconds"))
    if limit is None:
        return None
    spent = (workload.get("status") or {}).get("accumulatedPastExecutionTimeSeconds")
    return float(max(0, limit - (spent if isinstance(spent, int) else 0)))


def declared_end(workload: Mapping[str, Any]) -> float | None:
    """When Kueue stops an admitted Workload (seconds since the epoch): its ``Admitted=True``
    time plus what is left of its declared run; None when not admitted or without a limit."""
    left = declared_run_seconds(workload)
    if left is None:
        return None
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "Admitted"
            and condition.get("status") == "True"
        ):
            since = _epoch(condition.get("lastTransitionTime"))
            return None if since is None else since + left
    return None


def job_end(workloads: Sequence[Mapping[str, Any]]) -> float | None:
    """When a job of one or more Workloads ends: the last of their ends; None if any has none."""
    ends = [declared_end(w) for w in workloads]
    if not ends or any(e is None for e in ends):
        return None
    return max(e for e in ends if e is not None)


def job_run_seconds(workloads: Sequence[Mapping[str, Any]]) -> float | None:
    """How long a job of these Workloads runs at most; None when one declares nothing."""
    runs = [declared_run_seconds(w) for w in workloads]
    if not runs or any(r is None for r in runs):
        return None
    return max(r for r in runs if r is not None)


def beside_hold(
    hold: HeldPlacement, free_now: Mapping[str, int], ends: float | None
) -> dict[str, int]:
    """GPUs per node a job must leave alone now so as not to delay ``hold``: none when it
    ends (``ends``, seconds since the epoch) by the hold's instant, else what
    ``room_beside`` keeps off the held job's nodes."""
    if ends is not None and ends <= hold.until:
        return {}
    nodes = {n: free_now.get(n, 0) for n in hold.reserved}
    then = {n: free + hold.freed.get(n, 0) for n, free in nodes.items()}
    room = room_beside(nodes, then, hold.reserved)
    return {n: free - room[n] for n, free in nodes.items() if free > room[n]}


def where(snapshot: ClusterSnapshot, pods: Iterable[str]) -> str:
    """A placement in words: pods per rail group (``spine-0/rg-1 ×4``), most first."""
    counts: dict[str, int] = {}
    for node in pods:
        info = snapshot.node(node) if snapshot.has_node(node) else None
        place = info.place.rail_group if info is not None else None
        key = place or node
        counts[key] = counts.get(key, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{place} ×{count}" for place, count in ordered)


@dataclass(frozen=True, slots=True)
class Saving:
    """What a hold buys: the wait, the communication saved per step and over the run."""

    wait_seconds: float
    per_step_seconds: float
    saved_seconds: float  # step-seconds: steps of the run × seconds saved per step
    run_seconds: float


def hold_message(
    snapshot: ClusterSnapshot, now_pods: Sequence[str], later_pods: Sequence[str], saving: Saving
) -> str:
    """Why a job is held: the placement it waits for, when, and what it saves."""
    return (
        f"waiting {saving.wait_seconds:.0f} s for {len(later_pods)} pods on "
        f"{where(snapshot, later_pods)} (now: {where(snapshot, now_pods)}): "
        f"{saving.per_step_seconds:.4g} s less communication per step, "
        f"{saving.saved_seconds:.4g} step-seconds saved over its declared run of "
        f"{saving.run_seconds:.0f} s"
    )
