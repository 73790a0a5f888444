"""Operator start-up and shut-down handlers, kopf settings, and the periodic metrics census.

Start-up builds the operator's state (REST client, ledger, locks) into kopf's ``memo``, serves
``/metrics`` when a port is given and starts the census (fragmentation of the free GPUs) from
the same indexes the handlers read; clean-up stops them. A private registry has none of kopf's
default login handlers, so login uses the official client's loader like kopf does.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Callable
from typing import Any

import kopf

from fabricfit import __version__
from fabricfit.api.constants import FINALIZER, TOPOLOGY_LABEL
from fabricfit.handlers.common import views_of
from fabricfit.handlers.placed import PlacedTrigger
from fabricfit.kube.mirror import Mirror
from fabricfit.kube.rest import Rest, load_credentials
from fabricfit.metrics import OperatorMetrics
from fabricfit.reconcile.cluster_pods import (
    ClusterPods,
    ClusterPodsForbiddenError,
    require_cluster_pods,
)
from fabricfit.reconcile.context import OperatorConfig, OperatorState, Views
from fabricfit.reconcile.dra import DraInventoryWatch, dra_served
from fabricfit.reconcile.inventory import node_entry
from fabricfit.reconcile.observe import Observer

logger = logging.getLogger(__name__)
#: kopf watches only the pods labelled as a TrainingTopology's (server-side); ClusterPods
#: mirrors every other bound pod.
POD_SELECTOR = TOPOLOGY_LABEL
SYNC_TIMEOUT_SECONDS = 600.0


def configure_settings(settings: kopf.OperatorSettings) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="fabricfit.dev")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="fabricfit.dev", key="last-handled-configuration"
    )
    settings.scanning.disabled = True
    settings.watching.label_selectors["", "v1", "pods"] = POD_SELECTOR
    settings.posting.level = logging.WARNING
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 30
    settings.networking.request_timeout = 60


async def run_census(observer: Observer, take: Callable[[], Views], period: float) -> None:
    while True:
        try:
            observer.census(take())
        except Exception:
            logger.exception("cluster census for metrics failed")
        await asyncio.sleep(period)


async def start_mirrors(state: OperatorState, memo: kopf.Memo) -> None:
    """Mirror the nodes and every bound pod kopf does not watch, and wait for their first
    listings (a plan must never see fewer nodes or busy GPUs than there are). Namespaced mode
    refuses to start without cluster-wide pod reads."""
    if state.config.namespaces:
        try:
            await require_cluster_pods(state.rest, state.config.namespaces)
        except ClusterPodsForbiddenError as err:
            logger.error("%s", err)
            raise kopf.PermanentError(str(err)) from err
    nodes = Mirror(state.rest, ("v1", "nodes"), node_entry)
    pods = ClusterPods(state.rest, state.config.namespaces)
    memo["node_mirror"] = asyncio.create_task(nodes.run())
    memo["cluster_pods"] = asyncio.create_task(pods.run())
    waits = (nodes.synced.wait(), pods.synced.wait())
    await asyncio.wait_for(asyncio.gather(*waits), timeout=SYNC_TIMEOUT_SECONDS)
    memo["nodes"], memo["other_pods"] = nodes, pods
    logger.info("mirrored %d nodes and %d other bound pods", len(nodes), len(pods))
    gc.freeze()  # the listing is long-lived: keep it out of every later collection


async def watch_dra(state: OperatorState, memo: kopf.Memo) -> None:
    """When resource.k8s.io/v1 is served and readable, mirror its ResourceSlices and
    ResourceClaims and wait for their first listing (a plan must see every DRA GPU taken)."""
    if not await dra_served(state.rest):
        logger.info("resource.k8s.io/v1 is not watched: GPUs come from nvidia.com/gpu only")
        return
    watch = DraInventoryWatch(state.rest)
    memo["dra"] = watch
    await watch.start()
    logger.info("watching ResourceSlices and ResourceClaims (resource.k8s.io/v1) for DRA GPUs")


def start_state(memo: kopf.Memo, state: OperatorState, metrics: OperatorMetrics) -> Observer:
    """Put the operator's state, the Placed trigger and the metrics observer into ``memo``."""
    memo["state"] = state
    memo["placed"] = PlacedTrigger()
    metrics.api_requests = lambda: state.rest.requests
    metrics.set_version(__version__)
    memo["observer"] = observer = Observer(metrics, state)
    return observer


def serve_metrics(memo: kopf.Memo, metrics: OperatorMetrics, port: int) -> None:
    if not port:
        return
    try:
        memo["metrics_server"] = metrics.serve(port)
    except OSError as err:  # placement goes on without metrics (e.g. port taken)
        logger.error("cannot serve metrics on port %d: %s", port, err)


def register_lifecycle(
    registry: kopf.OperatorRegistry,
    config: OperatorConfig,
    metrics: OperatorMetrics,
    *,
    kubeconfig: str | None,
    metrics_port: int,
) -> None:
    @kopf.on.login(registry=registry, id="login")
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_via_client(**kwargs)

    @kopf.on.startup(registry=registry, id="startup")
    async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **kwargs: Any) -> None:
        configure_settings(settings)
        state = OperatorState(config=config, rest=Rest(load_credentials(kubeconfig)))
        observer = start_state(memo, state, metrics)
        serve_metrics(memo, metrics, metrics_port)
        await start_mirrors(state, memo)
        await watch_dra(state, memo)
        take = views_of(kwargs, memo)
        memo["census"] = asyncio.create_task(run_census(observer, take, config.resync_seconds))

    @kopf.on.cleanup(registry=registry, id="cleanup")
    async def cleanup(memo: kopf.Memo, **_: Any) -> None:
        for task in ("census", "cluster_pods", "node_mirror"):
            if task in memo:
                memo[task].cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await memo[task]
        if "dra" in memo:
            await memo["dra"].stop()
        if "metrics_server" in memo:
            server, _thread = memo["metrics_server"]
            server.shutdown()
        await memo["state"].rest.close()
