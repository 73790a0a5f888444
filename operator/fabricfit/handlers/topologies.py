"""Handlers of TrainingTopologies, their pods and the nodes: kopf events into the service.

A TrainingTopology has one idempotent reconcile behind create, resume, update and a resync
timer; events of its gated pods pin them (``reconcile.podevents``), and the bind of a plan's
last pod reconciles it at once so ``Placed`` does not wait for the resync (``handlers.placed``);
deletion releases it. kopf watches only our pods (a label selector); the indexes keep slim
copies of them and each TrainingTopology's recorded plan, which the handlers read as ``Views``
together with the nodes and other pods start-up mirrors (``kube.mirror``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import kopf

from fabricfit.api.constants import GROUP, PLURAL, TOPOLOGY_LABEL, VERSION
from fabricfit.handlers.common import Index, observe, post, views_of
from fabricfit.handlers.placed import job_pod_entry
from fabricfit.metrics import OperatorMetrics
from fabricfit.reconcile import podevents, service
from fabricfit.reconcile.context import Views
from fabricfit.reconcile.inventory import TopologyKey, holding_of, slim_pod
from fabricfit.reconcile.observe import timed

TT = (GROUP, VERSION, PLURAL)


def register_indexes(registry: kopf.OperatorRegistry) -> None:
    # Pods are watched with the label selector POD_SELECTOR (handlers.lifecycle): ours only.
    @kopf.index("", "v1", "pods", registry=registry, id="fabricfit_pods")
    def fabricfit_pods(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> Any:
        slim = slim_pod(body)
        return None if slim is None else {(namespace, name): slim}

    @kopf.index(*TT, registry=registry, id="fabricfit_topologies")
    def fabricfit_topologies(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> Any:
        return {(namespace, name): holding_of(body)}


def register_topologies(
    registry: kopf.OperatorRegistry, metrics: OperatorMetrics, resync_seconds: float
) -> None:
    async def reconcile(body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
        views = views_of(kwargs, memo)
        with timed(metrics, "reconcile"):
            outcome = await service.reconcile(body, memo["state"], views)
        post(body, outcome.transitions)
        observe(memo, lambda o: o.after_reconcile(body, outcome))

    for decorator in (kopf.on.create, kopf.on.resume, kopf.on.update):
        decorator(*TT, registry=registry, id="reconcile")(reconcile)
    kopf.timer(*TT, registry=registry, id="resync", interval=resync_seconds, idle=None)(reconcile)

    @kopf.on.delete(*TT, registry=registry, id="release")
    async def release(body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
        with timed(metrics, "release"):
            await podevents.release(body, memo["state"], views_of(kwargs, memo))
        memo["placed"].forget(service.key_of(body))
        observe(memo, lambda o: o.after_release(body))


def register_pod_events(registry: kopf.OperatorRegistry, metrics: OperatorMetrics) -> None:
    @kopf.index(
        "", "v1", "pods", registry=registry, id="fabricfit_job_pods",
        labels={TOPOLOGY_LABEL: kopf.PRESENT},
    )  # fmt: skip
    def fabricfit_job_pods(body: kopf.Body, **_: Any) -> Any:
        return job_pod_entry(body)

    @kopf.on.event(
        "", "v1", "pods", registry=registry, id="pin", labels={TOPOLOGY_LABEL: kopf.PRESENT}
    )
    async def pod_event(body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
        if kwargs.get("type") == "DELETED":
            return
        views = views_of(kwargs, memo)
        if not (body.get("spec") or {}).get("schedulingGates"):
            due = placed_due(body, memo, views, kwargs["fabricfit_job_pods"])
            if due is not None:
                with timed(metrics, "placed"):
                    result = await podevents.reconcile_by_name(memo["state"], views, *due)
                report(memo, result)
            return
        with timed(metrics, "pin"):
            result = await podevents.on_pod_event(body, kwargs.get("type"), memo["state"], views)
        report(memo, result)


def placed_due(
    pod: kopf.Body, memo: kopf.Memo, views: Callable[[], Views], job_pods: Index
) -> TopologyKey | None:
    """The TrainingTopology whose last planned pod ``pod`` just bound, if any (handlers.placed)."""
    entry = job_pod_entry(pod)
    if entry is None:
        return None
    ((key, _),) = entry.items()
    holding = memo["state"].ledger.newest(key, views().topologies.get(key))
    due: TopologyKey | None = memo["placed"].due(pod, holding, job_pods)
    return due


def report(memo: kopf.Memo, result: podevents.PodEventResult) -> None:
    """Count fast-path pins, or post the Events and metrics of the reconcile a pod caused."""
    if result.outcome is None or result.topology is None:
        if result.pinned:
            observe(memo, lambda o: o.metrics.count_pins(result.pinned))
        return
    topology, outcome = kopf.Body(result.topology), result.outcome  # type: ignore[arg-type]
    post(topology, outcome.transitions)
    observe(memo, lambda o: o.after_reconcile(topology, outcome))
