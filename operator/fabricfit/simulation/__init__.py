"""Cluster-level simulation: replay a job trace with fabricfit and with the peers.

``parse_trace`` validates a trace document (``trace``); ``replay`` runs it on a cluster snapshot
with one placer (``placers``: fabricfit's search, Kueue TAS BestFit, the default spread), event
by event with a FIFO queue (``replay``) under a queue policy (``holding``: strict FIFO, or hold
the head when waiting lets it finish sooner); ``summarize`` turns a run into the figures
``fabricfit simulate`` prints (``summary``). Pure: simulated time only, no clock, no I/O.
"""

from fabricfit.simulation.cluster import Sample
from fabricfit.simulation.holding import QUEUE_POLICIES, STRICT_FIFO, WAIT_IF_FASTER
from fabricfit.simulation.placers import FABRICFIT, PLACERS, Placed, Placer
from fabricfit.simulation.replay import JobRun, Replay, Rules, replay
from fabricfit.simulation.summary import Summary, summarize
from fabricfit.simulation.trace import TraceError, TraceJob, parse_trace

__all__ = [
    "FABRICFIT",
    "PLACERS",
    "QUEUE_POLICIES",
    "STRICT_FIFO",
    "WAIT_IF_FASTER",
    "JobRun",
    "Placed",
    "Placer",
    "Replay",
    "Rules",
    "Sample",
    "Summary",
    "TraceError",
    "TraceJob",
    "parse_trace",
    "replay",
    "summarize",
]
