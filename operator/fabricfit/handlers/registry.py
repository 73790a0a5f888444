"""Every kopf handler of the operator, registered into one registry built from the config.

Handlers stay thin: take kopf's kwargs, build read-only views of the indexes, call one service
function, post the Events it reports and hand the outcome to the metrics observer. A
TrainingTopology has one idempotent reconcile behind create, resume, update, a resync timer and
events of its pods; deletion releases it. Startup serves ``/metrics`` (when a port is given) and
runs the periodic cluster census (fragmentation) from the same indexes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from fabricfit import __version__
from fabricfit.api.constants import FINALIZER, GROUP, PLURAL, TOPOLOGY_LABEL, VERSION
from fabricfit.handlers.placed import PlacedTrigger, job_pod_entry
from fabricfit.kube.rest import Rest, load_credentials
from fabricfit.metrics import OperatorMetrics
from fabricfit.reconcile import service
from fabricfit.reconcile.cluster_pods import (
    ClusterPods,
    ClusterPodsForbiddenError,
    require_cluster_pods,
)
from fabricfit.reconcile.context import OperatorConfig, OperatorState, Views
from fabricfit.reconcile.draft import Transition
from fabricfit.reconcile.inventory import holding_of, slim_node, slim_pod
from fabricfit.reconcile.observe import Observer, timed

Index = Mapping[Any, Any]
INDEXES = ("fabricfit_nodes", "fabricfit_pods", "fabricfit_topologies")
logger = logging.getLogger(__name__)


def views_from(
    nodes: Index,
    pods: Index,
    topologies: Index,
    extra_pods: Callable[[], list[Mapping[str, Any]]] | None = None,
) -> Callable[[], Views]:
    """A function that copies kopf's live indexes into plain lists at call time (plus, in
    namespaced mode, the bound pods of the namespaces kopf does not watch)."""

    def take() -> Views:
        listed = [v for store in pods.values() for v in store]
        return Views(
            nodes=[v for store in nodes.values() for v in store],
            pods=listed + extra_pods() if extra_pods is not None else listed,
            topologies={k: next(iter(store)) for k, store in topologies.items() if store},
        )

    return take


def post(body: kopf.Body, transitions: tuple[Transition, ...]) -> None:
    for t in transitions:
        kopf.event(
            body,
            type=t.reason.severity.value,
            reason=t.reason.value,
            message=f"{t.type}={t.status}: {t.message}"[:1024],
        )


def configure_settings(settings: kopf.OperatorSettings) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="fabricfit.dev")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="fabricfit.dev", key="last-handled-configuration"
    )
    settings.scanning.disabled = True
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 30
    settings.networking.request_timeout = 60


def observe(memo: kopf.Memo, what: Callable[[Observer], None]) -> None:
    """Update metrics; a failure there is logged and never fails the handler."""
    try:
        what(memo["observer"])
    except Exception:
        logger.exception("updating metrics failed")


async def run_census(observer: Observer, take: Callable[[], Views], period: float) -> None:
    while True:
        try:
            observer.census(take())
        except Exception:
            logger.exception("cluster census for metrics failed")
        await asyncio.sleep(period)


async def watch_other_namespaces(state: OperatorState, memo: kopf.Memo) -> ClusterPods:
    """Namespaced mode: refuse to start without cluster-wide pod reads, else start the watch
    and wait for its first listing (a plan must never see fewer busy GPUs than there are)."""
    try:
        await require_cluster_pods(state.rest, state.config.namespaces)
    except ClusterPodsForbiddenError as err:
        logger.error("%s", err)
        raise kopf.PermanentError(str(err)) from err
    watcher = ClusterPods(state.rest, state.config.namespaces)
    memo["cluster_pods"] = asyncio.create_task(watcher.run())
    await asyncio.wait_for(watcher.synced.wait(), timeout=120)
    return watcher


def build_registry(
    config: OperatorConfig,
    kubeconfig: str | None = None,
    metrics_port: int = 0,
    metrics: OperatorMetrics | None = None,
) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()
    tt = (GROUP, VERSION, PLURAL)
    metrics = metrics if metrics is not None else OperatorMetrics()
    others: list[ClusterPods] = []  # namespaced mode: the pods of every other namespace

    def indexes(kwargs: Mapping[str, Any]) -> Callable[[], Views]:
        nodes, pods, topologies = (kwargs[name] for name in INDEXES)
        return views_from(nodes, pods, topologies, extra_pods=others[0].pods if others else None)

    @kopf.on.login(registry=registry, id="login")
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        # A private registry has none of kopf's default login handlers: use the official
        # client's loader (kubeconfig, then in-cluster service account), like kopf does.
        return kopf.login_via_client(**kwargs)

    @kopf.on.startup(registry=registry, id="startup")
    async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **kwargs: Any) -> None:
        configure_settings(settings)
        state = OperatorState(config=config, rest=Rest(load_credentials(kubeconfig)))
        memo["state"] = state
        memo["placed"] = PlacedTrigger()
        metrics.api_requests = lambda: state.rest.requests
        metrics.set_version(__version__)
        memo["observer"] = observer = Observer(metrics, state)
        if metrics_port:
            try:
                memo["metrics_server"] = metrics.serve(metrics_port)
            except OSError as err:  # placement goes on without metrics (e.g. port taken)
                logger.error("cannot serve metrics on port %d: %s", metrics_port, err)
        if config.namespaces:
            others.append(await watch_other_namespaces(state, memo))
        take = indexes(kwargs)
        memo["census"] = asyncio.create_task(run_census(observer, take, config.resync_seconds))

    @kopf.on.cleanup(registry=registry, id="cleanup")
    async def cleanup(memo: kopf.Memo, **_: Any) -> None:
        for task in ("census", "cluster_pods"):
            if task in memo:
                memo[task].cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await memo[task]
        if "metrics_server" in memo:
            server, _thread = memo["metrics_server"]
            server.shutdown()
        await memo["state"].rest.close()

    @kopf.index("", "v1", "nodes", registry=registry, id="fabricfit_nodes")
    def fabricfit_nodes(name: str, body: kopf.Body, **_: Any) -> dict[str, Any]:
        return {name: slim_node(body)}

    @kopf.index("", "v1", "pods", registry=registry, id="fabricfit_pods")
    def fabricfit_pods(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> Any:
        slim = slim_pod(body)
        return None if slim is None else {(namespace, name): slim}

    @kopf.index(*tt, registry=registry, id="fabricfit_topologies")
    def fabricfit_topologies(namespace: str | None, name: str, body: kopf.Body, **_: Any) -> Any:
        return {(namespace, name): holding_of(body)}

    async def reconcile(body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
        views = indexes(kwargs)
        with timed(metrics, "reconcile"):
            outcome = await service.reconcile(body, memo["state"], views)
        post(body, outcome.transitions)
        observe(memo, lambda o: o.after_reconcile(body, outcome, views))

    for decorator in (kopf.on.create, kopf.on.resume, kopf.on.update):
        decorator(*tt, registry=registry, id="reconcile")(reconcile)
    kopf.timer(*tt, registry=registry, id="resync", interval=config.resync_seconds, idle=None)(
        reconcile
    )

    @kopf.on.delete(*tt, registry=registry, id="release")
    async def release(body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
        views = indexes(kwargs)
        with timed(metrics, "release"):
            await service.release(body, memo["state"], views)
        memo["placed"].forget(service.key_of(body))
        observe(memo, lambda o: o.after_release(body))

    @kopf.index(
        "", "v1", "pods", registry=registry, id="fabricfit_job_pods",
        labels={TOPOLOGY_LABEL: kopf.PRESENT},
    )  # fmt: skip
    def fabricfit_job_pods(body: kopf.Body, **_: Any) -> Any:
        return job_pod_entry(body)

    @kopf.on.event(
        "", "v1", "pods", registry=registry, id="pin", labels={TOPOLOGY_LABEL: kopf.PRESENT}
    )
    async def pod_event(
        body: kopf.Body, memo: kopf.Memo, namespace: str | None, **kwargs: Any
    ) -> None:
        if kwargs.get("type") == "DELETED":
            return
        state: OperatorState = memo["state"]
        views = indexes(kwargs)
        if not (body.get("spec") or {}).get("schedulingGates"):
            await reconcile_if_all_bound(body, memo, views, kwargs["fabricfit_job_pods"])
            return
        with timed(metrics, "pin"):
            pinned = await service.pin_from_plan(body, state, views)
        if pinned is not None:
            if pinned:
                observe(memo, lambda o: o.metrics.count_pins(1))
            return
        owner = (body.get("metadata") or {}).get("labels", {}).get(TOPOLOGY_LABEL)
        if owner:
            await reconcile_by_name(memo, views, namespace or "", owner, "pin")

    async def reconcile_by_name(
        memo: kopf.Memo, views: Callable[[], Views], namespace: str, name: str, handler: str
    ) -> None:
        state: OperatorState = memo["state"]
        found = await service.read_topology(state, namespace, name)
        if found is None or not (found.get("status") or {}).get("pods"):
            return
        topology = kopf.Body(found)  # type: ignore[arg-type]
        with timed(metrics, handler):
            outcome = await service.reconcile(topology, state, views)
        post(topology, outcome.transitions)
        observe(memo, lambda o: o.after_reconcile(topology, outcome, views))

    async def reconcile_if_all_bound(
        pod: kopf.Body, memo: kopf.Memo, views: Callable[[], Views], job_pods: Index
    ) -> None:
        state: OperatorState = memo["state"]
        entry = job_pod_entry(pod)
        if entry is None:
            return
        ((key, _),) = entry.items()
        holding = state.ledger.newest(key, views().topologies.get(key))
        due = memo["placed"].due(pod, holding, job_pods)
        if due is not None:
            await reconcile_by_name(memo, views, due[0], due[1], "placed")

    return registry
