"""The Kueue Workloads of one job, decided together (pure).

Theory of operation
-------------------
Kueue makes one Workload for most jobs, but one per group for a LeaderWorkerSet: each group is
queued, reserved and admitted on its own, owned by the LeaderWorkerSet through a plain owner
reference, and numbered by Kueue's ``component-workload-index`` annotation. fabricfit places
a job as a whole (its rank layout spans every group), so:

* it plans only once Kueue has reserved quota for *every* component (:func:`job_stage` is
  ``PLAN`` or ``READY`` only then), on the union of their flavors' nodes;
* it answers every component's check alike (Ready, Retry or Rejected);
* it drops the plan as soon as any component loses its quota (eviction, preemption), and plans
  afresh once all of them hold quota again.

A component that holds quota while Kueue could not fit one of its siblings holds GPUs nobody
can use. Once its check has been Pending for ``patience_seconds`` with a sibling refused,
:func:`stalled` says so and fabricfit answers it ``Retry``: Kueue releases that quota and
requeues the group, so two jobs that each got part of their groups cannot hold each other
forever, and a job whose groups fit only together gets them together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from fabricfit.policy.kueuecheck import KueueWorkload, Stage, stage_of, waiting_message


@dataclass(frozen=True)
class JobWorkloads:
    """Every Workload Kueue made for one job, in component order, and how many it makes."""

    kind: str
    namespace: str
    name: str
    components: tuple[KueueWorkload, ...]
    expected: int = 1

    @property
    def flavors(self) -> tuple[str, ...]:
        """The flavors assigned to any component, distinct, in component order."""
        found: list[str] = []
        for component in self.components:
            found += [f for f in component.flavors if f not in found]
        return tuple(found)

    @property
    def missing(self) -> tuple[int, ...]:
        """Component indexes Kueue has not made a Workload for yet."""
        made = {c.component for c in self.components}
        return tuple(i for i in range(self.expected) if i not in made)

    def describe(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


def collect(
    kind: str, namespace: str, name: str, components: Sequence[KueueWorkload], expected: int
) -> JobWorkloads:
    """The job's Workloads sorted by component (duplicates of one index: the first kept)."""
    seen: dict[int, KueueWorkload] = {}
    for component in sorted(components, key=lambda c: (c.component, c.name)):
        seen.setdefault(component.component, component)
    return JobWorkloads(kind, namespace, name, tuple(seen.values()), max(1, expected))


def job_stage(job: JobWorkloads) -> Stage:
    """Where the job stands as a whole (see the module doc): WAITING while a component is
    missing or has no quota, PLAN once all have quota and some check is Pending, READY when
    every check is Ready."""
    stages = [stage_of(c) for c in job.components]
    if not stages:
        return Stage.WAITING
    if all(s is Stage.FINISHED for s in stages):
        return Stage.FINISHED
    if any(s is Stage.NO_CHECK for s in stages):
        return Stage.NO_CHECK
    if job.missing or any(s in (Stage.WAITING, Stage.FINISHED) for s in stages):
        return Stage.WAITING
    if any(s is Stage.DECIDED for s in stages):
        return Stage.DECIDED
    if all(s is Stage.READY for s in stages):
        return Stage.READY
    return Stage.PLAN


def job_waiting_message(job: JobWorkloads) -> str:
    """Why fabricfit holds no plan for the job (a WAITING or NO_CHECK stage)."""
    if job.missing:
        return (
            f"waiting for Kueue to make the Workload of {job.describe()}'s "
            f"component(s) {_indexes(job.missing)} ({len(job.components)} of {job.expected} made)"
        )
    blocking = [c for c in job.components if stage_of(c) in (Stage.NO_CHECK, Stage.WAITING)]
    first = blocking[0] if blocking else job.components[0]
    message = waiting_message(first)
    if job.expected > 1:
        ready = len(job.components) - len(blocking)
        message += (
            f"; fabricfit places {job.describe()}'s {job.expected} groups together "
            f"({ready} of {job.expected} hold quota)"
        )
    return message


def stalled(job: JobWorkloads, *, now: datetime, patience_seconds: float) -> str | None:
    """Why the components holding quota should give it back (see the module doc), or None."""
    refused = [c for c in job.components if not c.quota_reserved and c.quota_refused]
    holding = [c for c in job.components if stage_of(c) is Stage.PLAN]
    if not refused or not holding:
        return None
    since = [_parse(c.check_since) for c in holding]
    if any(t is None or (now - t).total_seconds() < patience_seconds for t in since):
        return None
    first = refused[0]
    return (
        f"Kueue could not reserve quota for component {first.component} of {job.describe()} "
        f"({first.quota_refused}); fabricfit places its {job.expected} groups together, "
        "so this group's quota is released until they fit at once"
    )


def _parse(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def _indexes(values: Sequence[int]) -> str:
    return ", ".join(str(v) for v in values)
