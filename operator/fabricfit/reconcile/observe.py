"""From what the handlers saw to the operator's metrics: job facts, plan quality, fragmentation.

Theory of operation
-------------------
The handlers call :class:`Observer` after each reconcile or release; it never changes the
cluster. Per-job gauges follow the status the reconcile left on the object, plan quality
included: the groups, crossings and spine bytes are part of the recorded plan
(``status.predicted``, written where the plan or re-placement is made and read through
:class:`~fabricfit.render.record.PlanRecord`), so a plan found after a restart or re-placed
reads the same as one this process just made, and nothing is priced here. A record without them
(made by an older operator) shows no crossing or spine gauges until it is planned again. Plans
are counted as they are written (a new or changed ``status.pods``), failures as ``Planned``
turns False (or changes its reason), so a job waiting for GPUs counts once, not once per resync.
The cluster census (fragmentation, the busiest shared link per rail group and spine block from
the running jobs' link load, and pruning gauges of TrainingTopologies that disappeared while
nobody watched) runs on its own period from the same kopf indexes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from fabricfit.api.conditions import ConditionType, Reason
from fabricfit.contention import busiest_by_place
from fabricfit.fabric.profiles import ProfileError
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.metrics import OperatorMetrics
from fabricfit.placement.quality import measure_fragmentation
from fabricfit.reconcile import planning
from fabricfit.reconcile.context import OperatorState, Views
from fabricfit.reconcile.detected import detection_of
from fabricfit.reconcile.inventory import TopologyKey, holds_of_others
from fabricfit.reconcile.service import Outcome, key_of
from fabricfit.render.record import read_plan

logger = logging.getLogger(__name__)
NOBODY: TopologyKey = ("", "")


@contextmanager
def timed(metrics: OperatorMetrics, handler: str) -> Iterator[None]:
    """Observe the duration of a handler call, and its exception type if it raised."""
    start = time.perf_counter()
    error: Exception | None = None
    try:
        yield
    except Exception as err:
        error = err
        raise
    finally:
        metrics.observe_handler(handler, time.perf_counter() - start, error)


def seconds_since(timestamp: object, now: datetime) -> float | None:
    """Seconds from an RFC 3339 timestamp (``metadata.creationTimestamp``) to ``now``."""
    if not isinstance(timestamp, str) or not timestamp:
        return None
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return (now - then).total_seconds()


class Observer:
    """Turns handler outcomes and index views into metric updates (see the module doc)."""

    def __init__(self, metrics: OperatorMetrics, state: OperatorState) -> None:
        self.metrics = metrics
        self.state = state

    def after_reconcile(self, body: Mapping[str, Any], outcome: Outcome) -> None:
        key = key_of(body)
        meta = body.get("metadata") or {}
        before = read_plan(body.get("status")).pods
        after = outcome.plan.pods
        self.metrics.count_pins(outcome.pinned)
        if after and after != before:
            made = _reason(outcome.status, ConditionType.PLANNED) or Reason.PLANNED.value
            self.metrics.count_plan("made", made)
        for t in outcome.transitions:
            if t.type == ConditionType.PLANNED and t.status == "False":
                self.metrics.count_plan("failed", t.reason.value)
            if t.type == ConditionType.PLACED and t.status == "True":
                waited = seconds_since(meta.get("creationTimestamp"), datetime.now(UTC))
                if waited is not None:
                    self.metrics.observe_placed(str(meta.get("uid") or key), waited)
        self.metrics.set_job(key, outcome.status)
        plan = outcome.plan
        self.metrics.set_quality(key, plan.quality, plan.groups)

    def after_release(self, body: Mapping[str, Any]) -> None:
        self.metrics.forget_job(key_of(body))

    def census(self, views: Views) -> None:
        """Fragmentation of the free GPUs; drop gauges of TrainingTopologies that are gone."""
        snapshot = planning.fresh_snapshot(self.state, views, self.state.config.label_scheme)
        reservations = self.state.ledger.merged(views.topologies)
        held = holds_of_others(NOBODY, reservations, views.pods, snapshot.claimed_by_pod)
        self.metrics.set_fragmentation(measure_fragmentation(snapshot, held))
        scheme = self.state.config.label_scheme
        unlabelled = detection_of(snapshot, scheme).unlabelled_gpu_nodes
        self.metrics.set_nodes_without_topology(len(unlabelled))
        self.link_census(snapshot, views)
        for key in self.metrics.jobs() - set(views.topologies):
            self.metrics.forget_job(key)

    def link_census(self, snapshot: ClusterSnapshot, views: Views) -> None:
        """The busiest shared link per rail group and spine block, from the running jobs'
        link load brought in step with their plans; skipped while a plan is being made (the
        plan syncs the load off the event loop, and the next census reads it)."""
        state = self.state
        if state.plan_lock.locked():
            return
        try:
            profile = planning.cluster_profile(snapshot, state)
        except ProfileError:  # the nodes name an unknown fabric: TopologyDetected says so
            return
        holdings = planning.newest_holdings(state, views)
        load = state.traffic.sync(holdings, snapshot, state.config.catalog, profile)
        capacities = planning.capacities_of(state, snapshot, profile)
        self.metrics.set_link_utilisation(busiest_by_place(load, capacities))


def _reason(status: Mapping[str, Any], type_: str) -> str | None:
    for c in status.get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == type_:
            return str(c.get("reason") or "") or None
    return None
