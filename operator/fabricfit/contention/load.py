"""The link load of the jobs running on a cluster: an immutable, incremental structure.

Theory of operation
-------------------
A running job's traffic (:class:`JobTraffic`) is derived once from its plan — per dimension,
the bytes it puts on each shared link per step and the seconds those transfers take at line
rate (:mod:`fabricfit.contention.traffic`) — together with its step time (compute plus
communication, :mod:`fabricfit.contention.duty`). From these it knows, per link, its *average
load* (bytes per step ÷ step seconds: the duty cycle is in the average) and, per dimension,
the *peak rate* it demands while that dimension communicates (bytes ÷ network seconds).

:class:`LinkLoad` sums the average loads of every running job per link and remembers which jobs
use each link. It is a value: :meth:`LinkLoad.add` and :meth:`LinkLoad.remove` return a new
load and leave the old one as it was, so a planner can keep a consistent view for a whole
decision while the operator moves on, and a what-if (a job removed, another added) never
disturbs the real one. Each call costs O(links the job uses) dictionary work plus one copy of
the per-link tables; a job filling whole nodes records no NIC links (nobody else can share
them, ``placement.neighbours``), so at 12,800 nodes and 500 jobs the tables hold the leaf and
spine links the jobs climb, a few thousand entries. Removing a job recomputes its links' sums
from the jobs left, so adding and removing in any order never drifts.

Typical use (the operator keeps one per cluster; ``fabricfit plan --running`` and
``fabricfit simulate`` build theirs the same way)::

    load = LinkLoad()
    load = load.add(traffic_of_job_a)        # a plan was written
    load = load.add(traffic_of_job_b)
    load.load(link)                          # average bytes/s all running jobs put on a link
    load.users(link)                         # which jobs they are
    load = load.remove("ns/job-a")           # the job finished (absent keys are ignored)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fabricfit.contention.links import LEAF, NIC, SPINE, Link, LinkCapacities
from fabricfit.contention.traffic import DimensionTraffic

#: Per link: (average bytes/s over the step, ((dimension index, peak bytes/s), ...)).
LinkUse = tuple[float, tuple[tuple[int, float], ...]]


@dataclass(frozen=True)
class JobTraffic:
    """One placed job's traffic: what the link load needs to know about it.

    ``key`` names it (``namespace/name`` in the operator), ``gpus`` weighs its slowdown in
    GPU-seconds, ``step_seconds`` (compute + communication) turns bytes per step into an
    average load."""

    key: str
    gpus: int
    step_seconds: float
    dimensions: tuple[DimensionTraffic, ...]
    links: Mapping[Link, LinkUse] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.step_seconds > 0:
            raise ValueError(f"job {self.key}: step seconds must be positive")
        average: dict[Link, float] = {}
        peaks: dict[Link, list[tuple[int, float]]] = {}
        for index, dim in enumerate(self.dimensions):
            for link, amount in dim.bytes_per_step.items():
                average[link] = average.get(link, 0.0) + amount / self.step_seconds
                peaks.setdefault(link, []).append((index, amount / dim.net_seconds))
        links = {link: (average[link], tuple(peaks[link])) for link in average}
        object.__setattr__(self, "links", MappingProxyType(links))

    def average(self, link: Link) -> float:
        """Average bytes/s this job puts on ``link`` (0 when it does not use it)."""
        use = self.links.get(link)
        return 0.0 if use is None else use[0]


class LinkLoad:
    """Average load per link of the jobs running, and who they are (see the module doc)."""

    __slots__ = ("_jobs", "_load", "_nic_nodes", "_users")

    def __init__(self) -> None:
        self._jobs: dict[str, JobTraffic] = {}
        self._load: dict[Link, float] = {}
        self._users: dict[Link, tuple[str, ...]] = {}
        self._nic_nodes: dict[str, int] = {}  # node -> NIC links of it some job loads

    def _copy(self) -> LinkLoad:
        new = LinkLoad()
        new._jobs = dict(self._jobs)
        new._load = dict(self._load)
        new._users = dict(self._users)
        new._nic_nodes = dict(self._nic_nodes)
        return new

    def add(self, job: JobTraffic) -> LinkLoad:
        """This load with ``job`` running too (ValueError if a job of that key already is)."""
        if job.key in self._jobs:
            raise ValueError(f"job {job.key} is already in the link load")
        new = self._copy()
        new._jobs[job.key] = job
        for link, (average, _) in job.links.items():
            new._load[link] = new._load.get(link, 0.0) + average
            new._users[link] = (*new._users.get(link, ()), job.key)
            if link.kind == NIC:
                new._nic_nodes[link.place] = new._nic_nodes.get(link.place, 0) + 1
        return new

    def remove(self, key: str) -> LinkLoad:
        """This load without the job ``key`` (the same load when it is not running)."""
        job = self._jobs.get(key)
        if job is None:
            return self
        new = self._copy()
        del new._jobs[key]
        for link in job.links:
            left = tuple(k for k in new._users[link] if k != key)
            if left:
                new._users[link] = left
                new._load[link] = sum(new._jobs[k].average(link) for k in left)
            else:
                del new._users[link]
                del new._load[link]
            if link.kind == NIC:
                count = new._nic_nodes[link.place] - 1
                if count:
                    new._nic_nodes[link.place] = count
                else:
                    del new._nic_nodes[link.place]
        return new

    def load(self, link: Link) -> float:
        """Average bytes/s the running jobs put on ``link``."""
        return self._load.get(link, 0.0)

    def users(self, link: Link) -> tuple[str, ...]:
        """Keys of the running jobs that use ``link``, in the order they were added."""
        return self._users.get(link, ())

    def job(self, key: str) -> JobTraffic:
        return self._jobs[key]

    @property
    def jobs(self) -> Mapping[str, JobTraffic]:
        return MappingProxyType(self._jobs)

    @property
    def nic_nodes(self) -> frozenset[str]:
        """Nodes some running job loads a NIC of (the only NICs a new job can share)."""
        return frozenset(self._nic_nodes)

    def links(self) -> Iterator[tuple[Link, float]]:
        """Every loaded link with its average bytes/s."""
        return iter(self._load.items())

    def __len__(self) -> int:
        return len(self._jobs)

    def __contains__(self, key: object) -> bool:
        return key in self._jobs


def busiest_by_place(
    load: LinkLoad, capacities: LinkCapacities, kinds: tuple[str, ...] = (LEAF, SPINE)
) -> dict[tuple[str, str], float]:
    """Per (link class, place) — a rail group's leaf uplinks, a spine block's uplinks — the
    average load over capacity of its busiest link (any rail, either direction): a view of
    bounded size for metrics (one value per rail group and spine block, never per node;
    ``nic`` is per node and left out by default)."""
    found: dict[tuple[str, str], float] = {}
    for link, average in load.links():
        if link.kind in kinds:
            key = (link.kind, link.place)
            found[key] = max(found.get(key, 0.0), average / capacities.of(link))
    return found
