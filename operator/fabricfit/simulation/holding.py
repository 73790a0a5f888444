"""Queue policies of the replay: start the head of the queue now, or hold it for a better placement.

Theory of operation
-------------------
``strict-fifo`` (the default, Kueue's ``StrictFIFO``) starts the head of the queue the moment a
placer finds it a place. ``wait-if-faster`` holds the head when waiting for running jobs to end
lets it finish sooner, and backfills the queue behind it beside its reservation. The decision
and the room a backfilled job may take are the operator's own (:mod:`fabricfit.placement.waiting`,
re-exported here): the replay hands them the running jobs' ends, known from the trace's declared
durations, and the cluster at each (``cluster.releases``, with the traffic left when contention
is on). The head is decided afresh at every later event; while a backfilled job leaves it no
place now, it keeps its latest hold and backfilling goes on against that reservation.

Only a placer that prices its placements can take this decision — fabricfit's — so the replay
applies it to fabricfit and serves the peers strictly FIFO.
"""

from __future__ import annotations

from fabricfit.placement.waiting import (
    LOOKAHEAD,
    MARGIN,
    QUEUE_POLICIES,
    STRICT_FIFO,
    WAIT_IF_FASTER,
    Hold,
    hold_until,
    room_beside,
)

__all__ = [
    "LOOKAHEAD",
    "MARGIN",
    "QUEUE_POLICIES",
    "STRICT_FIFO",
    "WAIT_IF_FASTER",
    "Hold",
    "hold_until",
    "room_beside",
]
