"""The link load of the running jobs, kept by the operator as their plans come and go.

Theory of operation
-------------------
Every TrainingTopology whose status records a plan (``status.pods``, with its prediction and
fabric) is a running job for the link load: its traffic (``placement.running.job_traffic``,
the convention ``fabricfit plan --running`` reads dumps with) joins the load once the plan is
written, is replaced when the plan changes (a re-plan, a re-placement) and leaves it when the
plan is dropped — the TrainingTopology deleted, its Kueue Workload evicted
(``reconcile.admission``), its workload finished (``reconcile.service``). The status is the
one source: after a restart kopf's index of TrainingTopologies, filled before any handler
runs, gives every plan back and the first sync rebuilds the load from it.

:meth:`RunningTraffic.sync` compares each plan with what the load holds for it (a
:class:`Signature`: the spec's generation, the pods, the predicted communication, the fabric)
and derives the traffic of the changed ones only, so a sync of 500 unchanged jobs is 500
tuple comparisons. A job's traffic also depends on where its nodes sit (rail group, spine,
NVLink domain, rails): when the nodes' facts change (the snapshot's ``facts_token``), each
job's places are compared and only the jobs whose nodes moved are derived again. Each running
job is priced on the fabric its status records (``status.fabric``, from the operator's
catalog), else on the planning job's. A spec that no longer parses, or a plan whose nodes are
gone, adds nothing (and is tried again when it changes).

The sync is pure CPU over frozen inputs (the holdings are copies, the snapshot is frozen) and
touches only this object, so planning runs it off the event loop under the planning lock
(``reconcile.planning``); the census runs it only while no plan is being made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fabricfit import policy
from fabricfit.contention import JobTraffic, LinkLoad
from fabricfit.fabric.profiles import FabricProfile, ProfileError
from fabricfit.fabric.profiles.catalog import Catalog
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.running import job_traffic, recorded_comm_seconds
from fabricfit.reconcile.inventory import Holding, TopologyKey

#: Where one planned node sits, as far as its traffic is concerned.
NodePlace = tuple[str, object, int, int]


@dataclass(frozen=True, slots=True)
class Signature:
    """What a job's traffic is derived from, in its status and spec."""

    generation: int | None
    pods: tuple[str, ...]
    step_comm_seconds: float | None
    fabric: str | None
    gpus_per_pod: int | None


@dataclass(frozen=True, slots=True)
class Entry:
    """One job in the load: what its traffic came from, and the traffic (None: none shared)."""

    signature: Signature
    places: tuple[NodePlace, ...] | None
    traffic: JobTraffic | None


def job_key(key: TopologyKey) -> str:
    """The link load's name of a TrainingTopology: ``namespace/name``."""
    return f"{key[0]}/{key[1]}"


def signature_of(holding: Holding) -> Signature | None:
    """The signature of a holding's plan; None when it records no plan."""
    plan = holding.plan
    if not plan.pods:
        return None
    return Signature(
        holding.generation, plan.pods, plan.step_comm_seconds, plan.fabric, holding.gpus_per_pod
    )


def places_of(snapshot: ClusterSnapshot, pods: tuple[str, ...]) -> tuple[NodePlace, ...] | None:
    """Where the plan's nodes sit; None when one of them is not in ``snapshot``."""
    found: list[NodePlace] = []
    for name in sorted(set(pods)):
        if not snapshot.has_node(name):
            return None
        node = snapshot.node(name)
        found.append((name, node.place, node.rails, node.gpus))
    return tuple(found)


class RunningTraffic:
    """The running jobs' :class:`~fabricfit.contention.LinkLoad`, kept in step with their
    recorded plans (see the module doc). Not thread-safe: one sync at a time."""

    def __init__(self) -> None:
        self._entries: dict[TopologyKey, Entry] = {}
        self._load = LinkLoad()
        self._token: tuple[object, str] | None = None
        self.derived = 0  # jobs whose traffic was derived (for tests and benchmarks)

    @property
    def load(self) -> LinkLoad:
        """The load as the last sync left it."""
        return self._load

    def sync(
        self,
        holdings: Mapping[TopologyKey, Holding],
        snapshot: ClusterSnapshot,
        catalog: Catalog,
        fallback: FabricProfile,
    ) -> LinkLoad:
        """Bring the load in step with ``holdings`` (every TrainingTopology, newest status) on
        ``snapshot``; returns it. ``fallback`` prices a job whose recorded fabric is unknown."""
        token = (snapshot.facts_token, snapshot.scheme)
        moved = token != self._token
        self._token = token
        load = self._load
        for key in [k for k in self._entries if k not in holdings]:
            load = self._drop(load, key)
        for key, holding in holdings.items():
            signature = signature_of(holding)
            entry = self._entries.get(key)
            if signature is None:
                if entry is not None:
                    load = self._drop(load, key)
                continue
            unchanged = entry is not None and entry.signature == signature
            if unchanged and not moved:
                continue
            places = places_of(snapshot, signature.pods)
            if unchanged and entry is not None and places == entry.places:
                continue
            if entry is not None:
                load = self._drop(load, key)
            self.derived += 1
            profile = _profile(catalog, signature.fabric, fallback)
            traffic = None if places is None else derive(key, holding, snapshot, profile)
            self._entries[key] = Entry(signature, places, traffic)
            if traffic is not None:
                load = load.add(traffic)
        self._load = load
        return load

    def _drop(self, load: LinkLoad, key: TopologyKey) -> LinkLoad:
        self._entries.pop(key, None)
        return load.remove(job_key(key))


def derive(
    key: TopologyKey, holding: Holding, snapshot: ClusterSnapshot, profile: FabricProfile
) -> JobTraffic | None:
    """The traffic of a holding's plan on ``profile``; None when it cannot be priced here."""
    admission = policy.admit(_settled(holding), None, require_workload=False)
    request = admission.request
    if request is None:
        return None
    pods = holding.plan.pods
    try:
        comm = recorded_comm_seconds(
            snapshot, request, profile, pods, holding.plan.step_comm_seconds
        )
        if comm is None:
            return None
        return job_traffic(snapshot, request, profile, pods, key=job_key(key), comm_seconds=comm)
    except ValueError:  # the cost model cannot price it on this fabric
        return None


def _settled(holding: Holding) -> dict[str, Any]:
    """The spec with the GPUs per pod its status settled, when the spec leaves them out (the
    operator takes them from the workload, which the link load does not read)."""
    spec = dict(holding.spec)
    if "gpusPerPod" not in spec and holding.gpus_per_pod is not None:
        spec["gpusPerPod"] = holding.gpus_per_pod
    return spec


def _profile(catalog: Catalog, name: str | None, fallback: FabricProfile) -> FabricProfile:
    if not name:
        return fallback
    try:
        return catalog.get(name)
    except ProfileError:
        return fallback
