"""The reservation ledger and the holds other plans place on free GPUs."""

from __future__ import annotations

from typing import Any

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.reconcile.inventory import (
    Ledger,
    holding_of,
    holds_of_others,
    slim_node,
    slim_pod,
)

ME = ("team", "mine")
OTHER = ("team", "other")


def pod(
    owner: str | None, node: str | None, gpus: int, phase: str = "Running", ns: str = "team"
) -> dict[str, Any]:
    labels = {TOPOLOGY_LABEL: owner} if owner else {}
    return {
        "metadata": {"name": f"p-{node}-{gpus}", "namespace": ns, "labels": labels},
        "spec": {
            "nodeName": node,
            "containers": [{"resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
        "status": {"phase": phase},
    }


def tt_body(
    rv: str, reservation: list[dict[str, Any]], pods: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"resourceVersion": rv},
        "status": {"reservation": reservation, "pods": pods or []},
    }


def test_holds_count_reservation_not_yet_used_by_bound_pods() -> None:
    reservations = {OTHER: {"n1": 16, "n2": 8}, ME: {"n3": 8}}
    pods = [pod("other", "n1", 8)]  # one of the two pods on n1 is bound already
    assert holds_of_others(ME, reservations, pods) == {"n1": 8, "n2": 8}


def test_own_reservation_and_terminal_pods_do_not_hold() -> None:
    reservations = {OTHER: {"n1": 8}, ME: {"n1": 8}}
    pods = [pod("other", "n1", 8, phase="Succeeded")]
    assert holds_of_others(ME, reservations, pods) == {"n1": 8}


def test_pods_of_same_name_in_other_namespace_do_not_count() -> None:
    reservations = {OTHER: {"n1": 8}}
    assert holds_of_others(ME, reservations, [pod("other", "n1", 8, ns="elsewhere")]) == {"n1": 8}


def test_ledger_prefers_newer_own_write_over_stale_watch() -> None:
    ledger = Ledger()
    ledger.record(ME, tt_body("20", [{"node": "n1", "gpus": 8}]))
    stale = {ME: holding_of(tt_body("10", []))}
    assert ledger.merged(stale) == {ME: {"n1": 8}}
    newer = {ME: holding_of(tt_body("30", [{"node": "n2", "gpus": 8}]))}
    assert ledger.merged(newer) == {ME: {"n2": 8}}


def test_deleted_topologies_drop_out_of_the_ledger() -> None:
    ledger = Ledger()
    ledger.record(ME, tt_body("20", [{"node": "n1", "gpus": 8}]))
    assert ledger.merged({}) == {}


def test_holding_reads_plan_and_ignores_garbage() -> None:
    body = tt_body("7", [{"node": "a", "gpus": 8}, {"node": 3, "gpus": "x"}],
                   [{"index": 1, "node": "b"}, {"index": 0, "node": "a"}])  # fmt: skip
    holding = holding_of(body)
    assert (holding.resource_version, holding.mode) == (7, "pinned")
    assert (holding.plan.reservation, holding.plan.pods) == ({"a": 8}, ("a", "b"))
    assert holding_of({"metadata": {"resourceVersion": "not-a-number"}}).resource_version == 0


def test_slim_pod_keeps_only_relevant_pods() -> None:
    assert slim_pod(pod(None, None, 8)) is None
    assert slim_pod(pod(None, "n1", 8)) is not None
    assert slim_pod(pod("x", None, 8)) is not None
    kept = slim_pod(pod("x", "n1", 8))
    assert kept is not None and kept["spec"]["containers"][0]["resources"]["limits"] == {
        "nvidia.com/gpu": "8"
    }


def test_slim_pod_keeps_the_scheduled_condition_of_unbound_pods_only() -> None:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/8 nodes are available", "lastTransitionTime": "t"}  # fmt: skip
    ready = {"type": "Ready", "status": "False"}
    status = {"phase": "Pending", "conditions": [ready, condition]}
    waiting = {**pod("x", None, 8), "status": status}
    kept = slim_pod(waiting)
    assert kept is not None and kept["status"] == {
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    running = {**pod("x", "n1", 8), "status": {"phase": "Running", "conditions": [condition]}}
    assert (slim_pod(running) or {})["status"] == {"phase": "Running"}


def test_slim_node_survives_missing_sections() -> None:
    assert slim_node({"metadata": {"name": "n"}})["status"]["conditions"] == []


def test_holding_knows_whether_its_plan_is_current_and_how_to_pin() -> None:
    body = {
        "metadata": {"resourceVersion": "9", "generation": 2},
        "spec": {"workloadRef": {"apiVersion": "v1", "kind": "Pod", "indexLabel": "rank"},
                 "placement": {"mode": "kueue-tas"}},
        "status": {"observedGeneration": 2, "pods": [{"index": 0, "node": "a"}]},
    }  # fmt: skip
    holding = holding_of(body)
    assert (holding.kind, holding.index_label, holding.mode, holding.current) == (
        "Pod", "rank", "kueue-tas", True,
    )  # fmt: skip
    body["metadata"]["generation"] = 3
    assert not holding_of(body).current


def test_ledger_newest_prefers_the_later_resource_version() -> None:
    ledger = Ledger()
    ledger.record(ME, tt_body("20", [{"node": "n1", "gpus": 8}]))
    older = holding_of(tt_body("10", []))
    newer = holding_of(tt_body("30", []))
    assert ledger.newest(ME, older) == ledger.written[ME]
    assert ledger.newest(ME, newer) == newer
    assert ledger.newest(OTHER, None) is None
