"""Wait when waiting pays: hold a job for a better placement that frees up soon (pure).

Theory of operation
-------------------
``strict-fifo`` starts a job the moment a place is found for it. Under it a big job can start
on a split placement (its data-parallel groups across the spine of an oversubscribed or
rail-only fabric) minutes before GPUs in one rail group come free, and then pay the slower
steps for hours. ``wait-if-faster`` asks, before starting the job on the placement found now,
whether it would *finish* sooner by waiting for running jobs to end.

:func:`hold_until` is that decision, shared by ``fabricfit simulate`` (the replay knows every
job's end from the trace) and the operator (a running job's end is what its Kueue Workload
declares, ``kueue.x-k8s.io/max-exec-time-seconds``; a job that declares none never counts as
ending). It walks the running jobs in the order they end (at most :data:`LOOKAHEAD`), each
instant with the cluster as it would be then, places the job again on each, and holds it when
some release instant ``t`` gives

    (t − now) < MARGIN × steps × (step communication now − step communication at t)

i.e. the wait is repaid, with a margin, by the communication the better placement saves over
the job's run. The placement found at ``t`` is the held job's reservation (:class:`Hold`).

While a job is held, others may start beside it as in EASY backfilling: a job that ends by
``t`` anywhere, a job that runs past ``t`` only on GPUs the held job will not need then
(:func:`room_beside`), so holding leaves no GPU idle that another job could use without
delaying the held one.

The rule weighs only the held job's own completion; jobs behind it that cannot start beside
it wait for it, which is why the simulation reports the queueing delay of the whole trace next
to the communication saved.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Final, Generic, Protocol, TypeVar

from fabricfit.api.models import QUEUE_POLICIES
from fabricfit.placement.decision import StepTimes

__all__ = [
    "LOOKAHEAD",
    "MARGIN",
    "QUEUE_POLICIES",
    "STRICT_FIFO",
    "WAIT_IF_FASTER",
    "Hold",
    "Priced",
    "hold_until",
    "room_beside",
]

STRICT_FIFO: Final = QUEUE_POLICIES[0]
WAIT_IF_FASTER: Final = QUEUE_POLICIES[1]

LOOKAHEAD = 8  # running jobs, in end order, whose release is tried
MARGIN = 0.9  # the saving must repay the wait by at least 1 / MARGIN


class Priced(Protocol):
    """A placement with its prediction: the node of every pod and the step times."""

    @property
    def pods(self) -> tuple[str, ...]: ...

    @property
    def predicted(self) -> StepTimes: ...


P = TypeVar("P", bound=Priced)
Later = TypeVar("Later")  # the cluster at a coming release, as the caller describes it


@dataclass(frozen=True, slots=True)
class Hold(Generic[P]):
    """Why a job waits: until ``until``, when it is placed as ``placed`` (its reservation);
    ``saved_seconds``: the communication seconds that placement saves over the job's run."""

    until: float
    placed: P
    saved_seconds: float = 0.0

    def reserved(self, gpus_per_pod: int) -> dict[str, int]:
        """GPUs per node the held job will take at ``until``."""
        out: dict[str, int] = {}
        for node in self.placed.pods:
            out[node] = out.get(node, 0) + gpus_per_pod
        return out


def hold_until(
    steps: float,
    placed_now: P,
    now: float,
    releases: Iterable[tuple[float, Later]],
    place: Callable[[Later], P | None],
) -> Hold[P] | None:
    """Whether a job of ``steps`` steps placed as ``placed_now`` should wait, and for what;
    ``None`` to start it now (see the module doc).

    ``releases`` yields, in time order, each instant a running job ends with the cluster as it
    would be then (every job ended so far released); ``place`` places the job on such a
    cluster."""
    comm_now = steps * placed_now.predicted.step_comm_seconds
    for time, later_cluster in islice(releases, LOOKAHEAD):
        wait = time - now
        if wait >= MARGIN * comm_now:
            return None  # no later placement can repay this wait
        later = place(later_cluster)
        if later is None:
            continue
        saved = comm_now - steps * later.predicted.step_comm_seconds
        if wait < MARGIN * saved:
            return Hold(time, later, saved)
    return None


def room_beside(
    free_now: Mapping[str, int], free_then: Mapping[str, int], reserved: Mapping[str, int]
) -> dict[str, int]:
    """GPUs per node a job that runs past a hold may take now without touching the reservation.

    ``free_then`` is what will be free when the hold ends if nothing else starts; what a job
    takes now and still holds then comes out of it, so it must leave ``reserved`` there.
    """
    return {
        node: min(free, max(0, free_then.get(node, free) - reserved.get(node, 0)))
        for node, free in free_now.items()
    }
