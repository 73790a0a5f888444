"""The handler layer: the registry holds every handler, Events carry the reason's severity, the
indexes keep slim copies, and a pod event reaches the service and the metrics."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import kopf
import pytest
from prometheus_client import CollectorRegistry

from fabricfit.api.conditions import Reason
from fabricfit.handlers import common, topologies
from fabricfit.handlers.placed import PlacedTrigger
from fabricfit.handlers.registry import build_registry
from fabricfit.metrics import OperatorMetrics
from fabricfit.reconcile import service
from fabricfit.reconcile.context import OperatorConfig
from fabricfit.reconcile.draft import Transition
from fabricfit.reconcile.observe import Observer
from unit.reconcile.world import JOB_PATH, World, gated_pod, job, topology


def handler_ids(registry: kopf.OperatorRegistry) -> dict[str, set[str]]:
    parts = ("_activities", "_indexing", "_watching", "_spawning", "_changing")
    return {p: {str(h.id) for h in getattr(registry, p).get_all_handlers()} for p in parts}


def test_the_registry_holds_every_handler() -> None:
    assert handler_ids(build_registry(OperatorConfig())) == {
        "_activities": {"login", "startup", "cleanup"},
        "_indexing": {*common.INDEXES, "fabricfit_job_pods"},
        "_watching": {"pin"},
        "_spawning": {"resync"},
        "_changing": {"reconcile", "release"},
    }


def test_the_kueue_handlers_are_registered_only_when_kueue_is_served() -> None:
    ids = handler_ids(build_registry(OperatorConfig(), kueue=True))
    assert ids["_indexing"] == {*common.INDEXES, *common.KUEUE_INDEXES, "fabricfit_job_pods"}
    assert ids["_watching"] == {"pin", "admission", "admission_check"}


def test_views_read_the_kueue_indexes_when_kopf_passes_them() -> None:
    base = {name: {} for name in common.INDEXES}
    kueue = {
        "fabricfit_kueue_workloads": {("ns", "Job", "j"): [{"w": 1}]},
        "fabricfit_admission_checks": {"fabricfit": [True]},
        "fabricfit_flavors": {"a": [{"spec": {}}]},
    }
    views = common.views_of({**base, **kueue}, kopf.Memo())()
    assert views.kueue.workloads == {("ns", "Job", "j"): [{"w": 1}]}
    assert views.kueue.checks == {"fabricfit"} and views.kueue.flavors == {"a": {"spec": {}}}
    assert common.views_of(base, kopf.Memo())().kueue.checks == frozenset()


def test_events_carry_the_severity_of_their_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    posted: list[dict[str, Any]] = []
    monkeypatch.setattr(kopf, "event", lambda body, **kw: posted.append(kw))
    common.post(
        kopf.Body({}),  # type: ignore[arg-type]
        (Transition(Reason.PLANNED, "ok"), Transition(Reason.INSUFFICIENT_GPUS, "x" * 2000)),
    )
    assert [(e["type"], e["reason"]) for e in posted] == [
        ("Normal", "Planned"),
        ("Warning", "InsufficientGPUs"),
    ]
    assert posted[1]["message"].startswith("Planned=False: x") and len(posted[1]["message"]) == 1024


def test_views_copy_the_indexes_and_the_mirrors() -> None:
    take = common.views_from(
        lambda: [{"n": 1}],
        {("ns", "p"): [{"p": 1}]},
        {("ns", "t"): ["h"]},
        lambda: [{"p": 2}],
    )
    views = take()
    assert views.nodes == [{"n": 1}] and views.pods == [{"p": 1}, {"p": 2}]
    assert views.topologies == {("ns", "t"): "h"}


def test_a_failing_metrics_update_never_fails_the_handler() -> None:
    def boom(_: Observer) -> None:
        raise RuntimeError("metrics broke")

    common.observe({"observer": None}, boom)  # type: ignore[arg-type]


def test_the_pod_event_handler_pins_and_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World(topology(), (JOB_PATH, job()))
    asyncio.run(service.reconcile(world.body(), world.state, world.views))
    pod = world.add_pod(gated_pod(0))
    metrics = OperatorMetrics(CollectorRegistry())
    registry = kopf.OperatorRegistry()
    topologies.register_pod_events(registry, metrics)
    (handler,) = registry._watching.get_all_handlers()  # the pod-event handler
    views = world.views()
    memo = kopf.Memo(
        state=world.state,
        observer=Observer(metrics, world.state),
        placed=PlacedTrigger(),
        nodes=SimpleNamespace(values=lambda: views.nodes),
    )
    indexes = {
        "fabricfit_pods": {},
        "fabricfit_topologies": {k: [h] for k, h in views.topologies.items()},
        "fabricfit_job_pods": {},
    }
    asyncio.run(handler.fn(body=kopf.Body(pod), memo=memo, type="ADDED", **indexes))  # type: ignore[arg-type]
    assert metrics.registry.get_sample_value("fabricfit_pods_pinned_total") == 1
