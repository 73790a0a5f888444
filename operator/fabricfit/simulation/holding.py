"""Queue policies of the replay: start the head of the queue now, or hold it for a better placement.

Theory of operation
-------------------
``strict-fifo`` (the default, Kueue's ``StrictFIFO``) starts the head of the queue the moment a
placer finds it a place. Under it a big job can start on a split placement (its data-parallel
groups across the spine of an oversubscribed or rail-only fabric) a few minutes before GPUs in one
rail group come free, and then pay the slower steps for hours.

``wait-if-faster`` asks, before starting the head job on the placement found now, whether the job
would *finish* sooner by waiting for running jobs to end. It walks the running jobs in the order
they end (their end times are known to the replay, from the trace's declared durations; at most
``LOOKAHEAD`` of them), releases their GPUs one by one on a copy of the cluster, and places the
job again on each; it holds the head when some release instant ``t`` gives

    (t − now) < MARGIN × steps × (step communication now − step communication at t)

i.e. the wait is repaid, with a margin, by the communication the better placement saves over the
job's run. The placement found at ``t`` is the held job's reservation. While the head is held the
queue behind it is backfilled, in order, as in EASY backfilling: a job may start now if it fits
and either ends by ``t`` or fits beside the reservation (``room_beside``: on no GPU the held job
will need at ``t``), so holding leaves no GPU idle that a queued job could use without delaying
the held one. The head is decided afresh at every later event; while a backfilled job leaves it
no place now, it keeps its latest hold and backfilling goes on against that reservation.

Only a placer that prices its placements can take this decision — fabricfit's — so the replay
applies it to fabricfit and serves the peers strictly FIFO. The rule weighs only the held job's
own completion; the jobs behind it that cannot be backfilled wait for it, which is why the
benchmark reports the queueing delay of the whole trace next to the communication saved.

It needs run times, which the operator does not have (a TrainingTopology declares no duration):
``fabricfit simulate --queue-policy wait-if-faster`` is a what-if for a cluster whose jobs declare
them (e.g. Kueue's ``kueue.x-k8s.io/max-exec-time-seconds``), not something the operator does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import TypeVar

from fabricfit.simulation.placers import Placed

Later = TypeVar("Later")  # the cluster at a coming release, as the replay describes it

STRICT_FIFO = "strict-fifo"
WAIT_IF_FASTER = "wait-if-faster"
#: Every queue policy by the name ``simulate --queue-policy`` takes, the default first.
QUEUE_POLICIES = (STRICT_FIFO, WAIT_IF_FASTER)

LOOKAHEAD = 8  # running jobs, in end order, whose release is tried
MARGIN = 0.9  # the saving must repay the wait by at least 1 / MARGIN


@dataclass(frozen=True, slots=True)
class Hold:
    """Why the head waits: until ``until``, when it is placed as ``placed`` (its reservation)."""

    until: float
    placed: Placed

    def reserved(self, gpus_per_pod: int) -> dict[str, int]:
        """GPUs per node the held job will take at ``until``."""
        out: dict[str, int] = {}
        for node in self.placed.pods:
            out[node] = out.get(node, 0) + gpus_per_pod
        return out


def hold_until(
    steps: int,
    placed_now: Placed,
    now: float,
    releases: Iterable[tuple[float, Later]],
    place: Callable[[Later], Placed | None],
) -> Hold | None:
    """Whether a job of ``steps`` steps placed as ``placed_now`` should wait, and for what; ``None``
    to start it now (see module doc).

    ``releases`` yields, in time order, each instant a running job ends with the cluster as it
    would be then (every job ended so far released: its snapshot, and with contention the
    traffic left); ``place`` places the job on such a cluster.
    """
    comm_now = steps * placed_now.predicted.step_comm_seconds
    for time, snapshot in islice(releases, LOOKAHEAD):
        wait = time - now
        if wait >= MARGIN * comm_now:
            return None  # no later placement can repay this wait
        later = place(snapshot)
        if later is None:
            continue
        saved = comm_now - steps * later.predicted.step_comm_seconds
        if wait < MARGIN * saved:
            return Hold(time, later)
    return None


def room_beside(
    free_now: Mapping[str, int], free_then: Mapping[str, int], reserved: Mapping[str, int]
) -> dict[str, int]:
    """GPUs per node a job that runs past a hold may take now without touching the reservation.

    ``free_then`` is what will be free when the hold ends if nothing else starts; what a job
    takes now and still holds then comes out of it, so it must leave ``reserved`` there.
    """
    return {
        node: min(free, max(0, free_then[node] - reserved.get(node, 0)))
        for node, free in free_now.items()
    }
