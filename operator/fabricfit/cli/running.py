"""``fabricfit plan --running TTS``: the running jobs a plan is priced next to, from a dump.

Theory of operation
-------------------
``kubectl get tt -A -o yaml|json`` lists every TrainingTopology with its status; a planned one
records its plan there (``status.pods``: the node of each pod, ``status.predicted``: its step
communication; ``render.record.read_plan`` reads it as the operator does). Each planned
TrainingTopology other than the one being planned is a running job: its spec goes through the
same policy ``plan`` applies (``policy.admit``, without its workload, which the dump does not
carry), its plan is located on the node dump (``placement.running.job_traffic``: the recorded
plans' convention) and priced on the fabric of the job being planned, and its traffic joins the
link load (:class:`~fabricfit.placement.neighbours.Neighbours`). Its step communication for the
duty cycle is the one its status records, or the cost model's price of its plan when the status
has none.

A file that is not a TrainingTopology list is invalid input (one line, exit 2). A job that
cannot be priced — its spec no longer valid, a planned node missing from the node dump — is
left out and named in the output (``skipped``), since a dump of a live cluster can hold both.
Objects without a plan are not running and are not mentioned. Without a pods dump the priced
jobs' planned GPUs count as held (``plan`` passes them as reservations); with one, its bound
pods already do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fabricfit.contention import JobTraffic
from fabricfit.fabric.objects import mapping_at, shorten, str_at, value_at
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.neighbours import Neighbours, neighbours_of
from fabricfit.placement.running import job_traffic, recorded_comm_seconds
from fabricfit.policy import admit
from fabricfit.render.record import read_plan

KIND = "TrainingTopology"


@dataclass(frozen=True)
class Running:
    """The running jobs of a dump: their link load, and the ones left out with why."""

    neighbours: Neighbours
    priced: tuple[str, ...]
    skipped: tuple[tuple[str, str], ...]
    held: Mapping[str, int]  # GPUs per node the priced jobs' plans hold

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "priced": list(self.priced),
            "with_traffic": len(self.neighbours.load),
            "skipped": [{"name": n, "reason": r} for n, r in self.skipped],
        }

    def line(self, path: str) -> str:
        traffic = len(self.neighbours.load)
        text = (
            f"running jobs from {path}: {len(self.priced)} priced, {traffic} with traffic on "
            "shared links"
        )
        if self.skipped:
            shown = "; ".join(f"{n} ({r})" for n, r in self.skipped[:5])
            more = f" and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else ""
            text += f", {len(self.skipped)} skipped: {shown}{more}"
        return text


def key_of(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` of an object (``default`` when it names no namespace)."""
    namespace = str_at(obj, "metadata", "namespace") or "default"
    return f"{namespace}/{str_at(obj, 'metadata', 'name') or ''}"


def running_jobs(
    objects: list[dict[str, Any]],
    snapshot: ClusterSnapshot,
    profile: FabricProfile,
    *,
    planning: str | None,
) -> Running:
    """The planned TrainingTopologies of ``objects`` other than ``planning`` (its key) as the
    link load the plan is priced next to (see the module docstring)."""
    jobs: list[JobTraffic] = []
    priced: list[str] = []
    skipped: list[tuple[str, str]] = []
    held: dict[str, int] = {}
    for obj in objects:
        key = key_of(obj)
        record = read_plan(mapping_at(obj, "status"))
        if key == planning or not record.pods:
            continue
        admission = admit(value_at(obj, "spec"), None, require_workload=False)
        if admission.request is None:
            skipped.append((key, shorten(admission.message, 120)))
            continue
        request = admission.request
        if len(record.pods) != request.pods:
            skipped.append((key, f"its plan has {len(record.pods)} pods, its spec {request.pods}"))
            continue
        comm = recorded_comm_seconds(
            snapshot, request, profile, record.pods, record.step_comm_seconds
        )
        if comm is None or any(not snapshot.has_node(n) for n in record.pods):
            skipped.append((key, "a planned node is not in the node dump"))
            continue
        try:
            traffic = job_traffic(
                snapshot, request, profile, record.pods, key=key, comm_seconds=comm
            )
        except ValueError as err:  # the cost model cannot price it on this fabric
            skipped.append((key, shorten(str(err), 120)))
            continue
        priced.append(key)
        for node in record.pods:
            held[node] = held.get(node, 0) + request.gpus_per_pod
        if traffic is not None:
            jobs.append(traffic)
    neighbours = neighbours_of(snapshot, profile, jobs)
    return Running(neighbours, tuple(priced), tuple(skipped), held)
