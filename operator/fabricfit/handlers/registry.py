"""Every kopf handler of the operator, registered into one registry built from the config.

Handlers stay thin: take kopf's kwargs, build read-only views of the indexes, call one service
function, post the Events it reports and hand the outcome to the metrics observer. What they
are: :mod:`~fabricfit.handlers.lifecycle` (login, start-up, clean-up, census) and
:mod:`~fabricfit.handlers.topologies` (indexes, reconcile, release, pod events) and, when
Kueue's API is served, :mod:`~fabricfit.handlers.admission` (the AdmissionCheck controller).
"""

from __future__ import annotations

import kopf

from fabricfit.handlers.admission import register_admission
from fabricfit.handlers.lifecycle import register_lifecycle
from fabricfit.handlers.topologies import (
    register_indexes,
    register_pod_events,
    register_topologies,
)
from fabricfit.metrics import OperatorMetrics
from fabricfit.reconcile.context import OperatorConfig


def build_registry(
    config: OperatorConfig,
    kubeconfig: str | None = None,
    metrics_port: int = 0,
    metrics: OperatorMetrics | None = None,
    *,
    kueue: bool = False,
) -> kopf.OperatorRegistry:
    """Every handler; the Kueue AdmissionCheck handlers only when ``kueue`` (the API server
    served Kueue's API at start-up: kopf cannot watch resources that are not served)."""
    registry = kopf.OperatorRegistry()
    metrics = metrics if metrics is not None else OperatorMetrics()
    register_lifecycle(registry, config, metrics, kubeconfig=kubeconfig, metrics_port=metrics_port)
    register_indexes(registry)
    register_topologies(registry, metrics, config.resync_seconds)
    register_pod_events(registry, metrics)
    if kueue:
        register_admission(registry, metrics)
    return registry
