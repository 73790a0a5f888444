"""A status draft records transitions and writes nothing when nothing changed."""

from __future__ import annotations

from fabricfit.api.conditions import Reason
from fabricfit.reconcile.draft import StatusDraft


def test_new_condition_is_a_transition_and_produces_a_body() -> None:
    draft = StatusDraft(None, generation=3)
    draft.condition(Reason.PLANNED, "8 pods on 8 nodes")
    body = draft.body()
    assert body is not None
    assert body["summary"] == "Planned"
    assert body["observedGeneration"] == 3
    assert [(t.type, t.status, t.reason) for t in draft.transitions] == [
        ("Planned", "True", "Planned")
    ]


def test_unchanged_status_writes_nothing() -> None:
    first = StatusDraft(None, generation=1)
    first.condition(Reason.PLANNED, "ok")
    first.set(worldSize=64)
    body = first.body()
    assert body is not None
    again = StatusDraft(body, generation=1)
    again.condition(Reason.PLANNED, "ok")
    again.set(worldSize=64)
    assert again.body() is None
    assert again.transitions == []


def test_message_change_is_written_but_not_a_transition() -> None:
    first = StatusDraft(None, generation=1)
    first.condition(Reason.WAITING_FOR_PODS, "0 of 8")
    body = first.body()
    again = StatusDraft(body, generation=1)
    again.condition(Reason.WAITING_FOR_PODS, "4 of 8")
    assert again.body() is not None
    assert again.transitions == []


def test_transition_time_is_kept_when_status_is_unchanged() -> None:
    first = StatusDraft(None, generation=1)
    first.condition(Reason.NODES_HEALTHY, "fine")
    body = first.body()
    assert body is not None
    stamp = body["conditions"][0]["lastTransitionTime"]
    again = StatusDraft(body, generation=2)
    again.condition(Reason.NODES_HEALTHY, "fine")
    assert again.body()["conditions"][0]["lastTransitionTime"] == stamp  # type: ignore[index]
