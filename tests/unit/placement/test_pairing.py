"""The partner's located ranks, the KV units and replicas of a layout, and the shard pairs."""

from __future__ import annotations

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.api.serving import ServingSpec
from fabricfit.placement.layout import build_layout
from fabricfit.placement.pairing import (
    Partner,
    kv_transfer,
    kv_units,
    partner_slots,
    replica_pods,
    replicas,
)
from unit.placement.clusters import make_cluster

ORDER = "tp-cp-ep-pp-dp"


def test_replicas_and_kv_units_of_a_layout() -> None:
    layout = build_layout(Parallelism(tensor=2, pipeline=2, data=4, expert=2), 2, ORDER)
    assert replicas(layout) == ((0, 1, 2, 3, 4, 5, 6, 7), (8, 9, 10, 11, 12, 13, 14, 15))
    assert kv_units(layout)[:2] == ((0, 1, 4, 5), (2, 3, 6, 7))  # one per expert rank
    assert replica_pods(layout) == ((0, 1, 2, 3), (4, 5, 6, 7))


def test_partner_pods_take_windows_in_pod_order_unless_their_gpus_are_known() -> None:
    snapshot = make_cluster(nodes_per_rail_group=2, rail_groups_per_spine=1)
    partner = Partner("p", Parallelism(tensor=4, data=2), 4, ORDER, ("n000", "n000"))
    slots = partner_slots(snapshot, partner)
    assert slots is not None and [s.gpu for s in slots] == list(range(8))
    known = Partner("p", Parallelism(tensor=4), 4, ORDER, ("n001",), ((4, 5, 6, 7),))
    found = partner_slots(snapshot, known)
    assert found is not None and [(s.node, s.gpu) for s in found] == [
        ("n001", g) for g in range(4, 8)
    ]
    gone = Partner("p", Parallelism(tensor=4), 4, ORDER, ("n999",))
    assert partner_slots(snapshot, gone) is None


def test_the_prefill_side_sends_to_the_decode_side() -> None:
    model = ModelShape(hidden_size=1024, layers=4, attention_heads=8, kv_heads=2)
    layout = build_layout(Parallelism(tensor=2, data=2), 2, ORDER)
    partner = Partner("p", Parallelism(tensor=4), 4, ORDER, ("n000",))
    decode = ServingSpec(role="decode", decode_batch=1, prompt_tokens=100)
    transfer = kv_transfer(layout, model, decode, partner)
    assert transfer is not None
    # The partner's ranks follow this job's 4: one prefill replica of 4 feeds two of 2.
    assert transfer.pairs == ((4, 0), (5, 1), (6, 0), (7, 1), (4, 2), (5, 3), (6, 2), (7, 3))
    assert transfer.shard_bytes == 100 * 2 * 4 * 2 * 128 * 2 // 4
    prefill = ServingSpec(role="prefill", decode_batch=1, prompt_tokens=100)
    assert kv_transfer(layout, model, prefill, partner) is not None
    replica = ServingSpec(decode_batch=1, prompt_tokens=100)
    assert kv_transfer(layout, model, replica, partner) is None
    short = Partner("p", Parallelism(tensor=4, data=2), 4, ORDER, ("n000",))
    assert kv_transfer(layout, model, decode, short) is None  # its plan lacks a pod
