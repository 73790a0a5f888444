"""The "last pod bound" trigger: fires once per plan, exactly when every planned pod is bound."""

from __future__ import annotations

from typing import Any

from fabricfit.handlers.placed import PlacedTrigger, job_pod_entry
from fabricfit.reconcile.inventory import Holding
from fabricfit.render.record import PlanRecord

KEY = ("team", "llama")


def pod(name: str, node: str | None, phase: str = "Pending", owner: str = "llama") -> Any:
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "labels": {"fabricfit.dev/topology": owner},
        },
        "spec": {"nodeName": node} if node else {},
        "status": {"phase": phase},
    }


def index(*pods: Any) -> dict[Any, list[tuple[str, bool]]]:
    out: dict[Any, list[tuple[str, bool]]] = {}
    for p in pods:
        entry = job_pod_entry(p)
        assert entry is not None
        for key, value in entry.items():
            out.setdefault(key, []).append(value)
    return out


HOLDING = Holding(resource_version=5, plan=PlanRecord(("a", "b"), {"a": 8, "b": 8}))


def test_fires_when_the_last_pod_is_bound_and_only_once() -> None:
    trigger = PlacedTrigger()
    first, second = pod("p0", "a", "Running"), pod("p1", None)
    assert trigger.due(first, HOLDING, index(first, second)) is None
    second = pod("p1", "b")
    assert trigger.due(second, HOLDING, index(first, second)) == KEY
    assert trigger.due(second, HOLDING, index(first, second)) is None  # a status update
    moved = Holding(resource_version=9, plan=PlanRecord(("c", "b"), {"c": 8, "b": 8}))
    assert trigger.due(second, moved, index(first, second)) == KEY  # a new plan re-arms
    trigger.forget(KEY)
    assert trigger.due(second, moved, index(first, second)) == KEY


def test_terminal_unlabelled_and_unplanned_pods_do_not_fire() -> None:
    trigger = PlacedTrigger()
    done = pod("p0", "a", "Succeeded")
    bound = pod("p1", "b")
    assert trigger.due(bound, HOLDING, index(done, bound)) is None
    assert job_pod_entry({"metadata": {"name": "x", "labels": {}}}) is None
    assert trigger.due(bound, None, index(bound)) is None
    assert trigger.due(bound, Holding(1), index(bound)) is None
