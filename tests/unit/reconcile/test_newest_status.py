"""A reconcile reads one status: the newest of the (possibly stale, live) body and our own write.

Found by tests/e2e/test_fuzz.py: a reconcile built its draft from a stale body (no conditions)
while its plan check read the body again after kopf had replaced it with a newer one (a plan);
it reused the plan and wrote ``conditions: [Placed]``, wiping ``Planned``.
"""

from __future__ import annotations

from typing import Any

from fabricfit.reconcile.inventory import Ledger

KEY = ("ns", "tt")


def body(rv: int, status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "tt", "namespace": "ns", "resourceVersion": str(rv)},
            "status": status}  # fmt: skip


def test_our_newer_write_wins_over_a_stale_body() -> None:
    ledger = Ledger()
    planned = {"conditions": [{"type": "Planned"}], "pods": [{"index": 0, "node": "a"}]}
    ledger.record(KEY, body(12, planned))
    assert ledger.newest_status(KEY, body(10, {})) == planned


def test_a_newer_body_wins_over_our_older_write() -> None:
    ledger = Ledger()
    ledger.record(KEY, body(12, {"pods": []}))
    newer = {"conditions": [{"type": "Placed"}]}
    assert ledger.newest_status(KEY, body(15, newer)) == newer


def test_the_status_is_a_private_copy() -> None:
    ledger = Ledger()
    live = body(3, {"pods": [{"index": 0, "node": "a"}]})
    status = ledger.newest_status(KEY, live)
    live["status"]["pods"].append({"index": 1, "node": "b"})  # kopf replaces the view
    assert status == {"pods": [{"index": 0, "node": "a"}]}


def test_forget_drops_the_recorded_status() -> None:
    ledger = Ledger()
    ledger.record(KEY, body(12, {"pods": [{"index": 0, "node": "a"}]}))
    ledger.forget(KEY)
    assert ledger.newest_status(KEY, body(1, {})) == {}
