"""The cluster as a replay changes it: free GPUs per node, the snapshot they make, and samples.

GPU indices follow the snapshot's convention (used GPUs are a node's lowest), so a freed window
is priced as the node's highest free GPUs, as the operator would see it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence, Set
from dataclasses import dataclass, replace

from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.slots import leaf_key
from fabricfit.simulation.trace import TraceJob

#: A running job: (end time, start order, the job, the node of each pod).
Running = tuple[float, int, TraceJob, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Sample:
    """The cluster just after the events of one instant."""

    time: float
    used_gpus: int  # by the trace's jobs and the dump's own pods
    largest_rail_group_gpus: int  # largest whole-node job inside one rail group


@dataclass(slots=True)
class SimCluster:
    """The mutable state of one replay: free GPUs per node and the snapshot they make."""

    base: ClusterSnapshot
    free: dict[str, int]
    snapshot: ClusterSnapshot
    capacity: dict[str, int]  # free GPUs with no trace job running

    @classmethod
    def of(cls, snapshot: ClusterSnapshot) -> SimCluster:
        free = {n.name: n.free_gpus for n in snapshot.nodes}
        return cls(snapshot, free, snapshot, dict(free))

    def copy(self) -> SimCluster:
        return SimCluster(self.base, dict(self.free), self.snapshot, self.capacity)

    def take(self, pods: Sequence[str], gpus_per_pod: int, sign: int) -> None:
        """Take (``sign`` 1) or give back (-1) ``gpus_per_pod`` GPUs on the node of each pod."""
        for node in pods:
            self.free[node] -= sign * gpus_per_pod
            if not 0 <= self.free[node] <= self.capacity[node]:
                raise AssertionError(f"replay over-committed node {node}: {self.free[node]} free")
        self.snapshot = self.with_free(self.free, changed=set(pods))

    def with_free(
        self, free: Mapping[str, int], changed: Set[str] | None = None
    ) -> ClusterSnapshot:
        """The base snapshot with these free GPUs per node; with ``changed``, only those nodes
        differ from the current snapshot (the others keep their objects: a job's one pod
        rebuilt every node of the cluster, twice per job)."""
        if changed is None:
            nodes = tuple(replace(n, free_gpus=free[n.name]) for n in self.base.nodes)
        else:
            nodes = tuple(
                replace(n, free_gpus=free[n.name]) if n.name in changed else n
                for n in self.snapshot.nodes
            )
        return replace(self.base, nodes=nodes)

    def sample(self, time: float) -> Sample:
        used, per_leaf = 0, dict[str, int]()
        for node in self.base.nodes:
            free = self.free[node.name]
            used += node.gpus - free if node.available else node.gpus
            if node.available and free == node.gpus and node.gpus > 0:
                key = leaf_key(node)[0]
                per_leaf[key] = per_leaf.get(key, 0) + node.gpus
        return Sample(time, used, max(per_leaf.values(), default=0))


def releases(
    cluster: SimCluster, running: Sequence[Running]
) -> Iterator[tuple[float, SimCluster, TraceJob]]:
    """The cluster at each coming job end, every job ended by then released (lazily, in order),
    with the job that ends then.

    One state is updated in place and yielded each time: read it before advancing."""
    later = cluster.copy()
    for end, _, job, pods in sorted(running, key=lambda entry: entry[:2]):
        later.take(pods, job.request.gpus_per_pod, -1)
        yield end, later, job


def free_at(cluster: SimCluster, running: Sequence[Running], time: float) -> dict[str, int]:
    """Free GPUs per node at ``time`` if nothing else starts: every job ending by then released."""
    free = dict(cluster.free)
    for end, _, job, pods in running:
        if end <= time:
            for node in pods:
                free[node] += job.request.gpus_per_pod
    return free
