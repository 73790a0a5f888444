"""Placing a served model: replicas as blocks, whole replicas inside an NVLink domain, replicas
spread over racks, the side planned second next to its partner."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.api.serving import ServingSpec
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.candidates import job_blocks
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import PlacementDecision, StepTimes
from fabricfit.placement.layout import build_layout
from fabricfit.placement.pairing import Partner
from fabricfit.placement.plugins import PlanContext
from fabricfit.placement.plugins.replica_spread import ReplicaSpread
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.search import plan_placement
from fabricfit.placement.serving import (
    SpreadGoal,
    block_ladder,
    careful_level,
    replica_bestfit,
    replica_loads,
)
from fabricfit.placement.slots import build_leaf_domains
from unit.placement.clusters import make_cluster

H100 = get_profile("dgx-h100")
GB200 = get_profile("gb200-nvl72")
MODEL = ModelShape(hidden_size=8192, layers=80, attention_heads=64, kv_heads=8)
ORDER = "tp-cp-ep-pp-dp"


def request(
    gpus_per_pod: int, role: str = "replica", spread: str = "None", **dims: int
) -> PlacementRequest:
    serving = ServingSpec(decode_batch=64, prompt_tokens=2048, role=role, spread=spread)  # type: ignore[arg-type]
    return PlacementRequest(
        parallelism=Parallelism(**dims),
        gpus_per_pod=gpus_per_pod,
        rank_order=ORDER,
        model=MODEL,
        serving=serving,
    )


def nvl72(racks: int = 2, used: dict[str, int] | None = None) -> ClusterSnapshot:
    """GB200 NVL72 racks: 18 trays of 4 GPUs, one NVLink domain per rack, a rail group each."""
    return make_cluster(
        rail_groups_per_spine=racks,
        nodes_per_rail_group=18,
        rack_nodes=18,
        domain_nodes=18,
        gpus=4,
        used=used,
    )


def domains_of(snapshot: ClusterSnapshot, decision: PlacementDecision) -> list[str]:
    return [snapshot.node(n).place.nvlink_domain for n in decision.pods]


def test_blocks_are_replicas_and_a_replica_that_fits_a_domain_is_one_unit() -> None:
    req = request(4, tensor=8, pipeline=2, data=2)
    layout = build_layout(req.parallelism, 4, ORDER)
    whole, tensor_units = list(block_ladder(req, layout, 72))
    assert whole == (((0, 1, 2, 3),), ((4, 5, 6, 7),))  # a replica: one block, one unit
    assert tensor_units == (((0, 1), (2, 3)), ((4, 5), (6, 7)))
    assert list(block_ladder(req, layout, 8)) == [tensor_units]  # 16 GPUs: no 8-GPU domain
    # Training keeps its stage blocks: data joins the pods, pipeline does not.
    training = replace(req, serving=None)
    assert list(block_ladder(training, layout, 72)) == [job_blocks(layout)]


def test_a_multi_tray_replica_stays_in_one_nvlink_domain() -> None:
    # Rack 0 has 6 free trays, rack 1 all 18: TP8 x PP2 replicas of 4 trays each.
    used = {f"n{i:03d}": 4 for i in range(12)}
    snapshot = nvl72(used=used)
    decision = plan_placement(snapshot, request(4, tensor=8, pipeline=2, data=3), GB200)
    assert decision.feasible
    domains = domains_of(snapshot, decision)
    for replica in range(3):
        assert len(set(domains[4 * replica : 4 * replica + 4])) == 1, domains


def test_a_replica_over_two_hgx_nodes_shares_one_rail_group() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4, interleave=True)
    decision = plan_placement(snapshot, request(8, tensor=8, pipeline=2, data=2), H100)
    assert decision.feasible
    for replica in range(2):
        pair = decision.pods[2 * replica : 2 * replica + 2]
        assert len({snapshot.node(n).place.rail_group for n in pair}) == 1, decision.pods
    assert decision.predicted is not None and decision.predicted.serving is not None
    assert decision.predicted.by_dimension["data"] == 0.0


def test_spread_over_racks_balances_replicas_and_without_it_they_pack() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=8, rack_nodes=4)
    spread = plan_placement(snapshot, request(8, spread="Rack", tensor=8, data=4), H100)
    racks = Counter(snapshot.node(n).place.rack for n in spread.pods)
    assert spread.feasible and sorted(racks.values()) == [2, 2], spread.pods
    assert spread.scores["replica-spread"] == 100.0
    packed = plan_placement(snapshot, request(8, tensor=8, data=4), H100)
    assert len({snapshot.node(n).place.rack for n in packed.pods}) == 1, packed.pods


def test_spread_gives_each_replica_its_own_rack_where_there_are_enough() -> None:
    snapshot = nvl72(racks=3)
    decision = plan_placement(snapshot, request(4, spread="Rack", tensor=8, data=3), GB200)
    domains = domains_of(snapshot, decision)
    assert len({domains[2 * r] for r in range(3)}) == 3, domains
    assert decision.reasons == ()


def test_the_spread_plugin_refuses_crowding_beyond_the_goal() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=8, rack_nodes=4)
    req = request(8, spread="Rack", tensor=8, data=4)
    layout = build_layout(req.parallelism, 8, ORDER)
    ctx = PlanContext(
        request=req,
        layout=layout,
        domains=build_leaf_domains(snapshot.nodes, 8, {}),
        lower_bound=StepTimes(1.0),
        replicas=((0,), (1,), (2,), (3,)),
        spread_goal=SpreadGoal("Rack", 2, 2),
    )
    slots = {s.node: s for d in ctx.domains for s in d.slots}
    crowded = tuple(slots[f"n00{i}"] for i in range(4))  # all four in rack r0
    assert replica_loads(ctx.replicas, crowded, "Rack") == {"s0/rg0/r0": 4}
    reason = ReplicaSpread().filter(ctx, crowded)
    assert reason is not None and "4 replicas would share rack s0/rg0/r0" in reason
    balanced = (slots["n000"], slots["n004"], slots["n001"], slots["n005"])
    assert ReplicaSpread().filter(ctx, balanced) is None


def test_the_side_planned_second_goes_to_its_partners_rack() -> None:
    # The partner (prefill, TP8 x 2) sits in rack 1; rack 0 is the tighter fit for the decode
    # side, but its KV transfer would leave NVLink there.
    used = {f"n{i:03d}": 4 for i in range(10)}  # rack 0: 8 trays free; rack 1: 18
    snapshot = nvl72(used=used)
    partner_pods = tuple(f"n0{18 + i}" for i in range(4))
    partner = Partner("pre", Parallelism(tensor=8, data=2), 4, ORDER, partner_pods)
    reservations = dict.fromkeys(partner_pods, 4)
    alone = plan_placement(snapshot, request(4, role="decode", tensor=8, data=2), GB200,
                           reservations=reservations)  # fmt: skip
    assert set(domains_of(snapshot, alone)) == {"s0/rg0/r0/d0"}  # best fit, no partner known
    req = replace(request(4, role="decode", tensor=8, data=2), partner=partner)
    paired = plan_placement(snapshot, req, GB200, reservations=reservations)
    assert set(domains_of(snapshot, paired)) == {"s0/rg1/r0/d0"}, paired.pods
    assert paired.predicted is not None and paired.predicted.serving is not None
    kv = paired.predicted.serving.kv_transfer_seconds
    assert kv is not None
    # Priced where the unpaired plan went, the transfer costs several times more.
    far = plan_placement(
        snapshot,
        req,
        GB200,
        reservations={
            **reservations,
            **dict.fromkeys([f"n0{18 + i}" for i in range(4, 18)], 4),
        },
    )
    assert far.predicted is not None and far.predicted.serving is not None
    assert far.predicted.serving.kv_transfer_seconds is not None
    assert far.predicted.serving.kv_transfer_seconds > 5 * kv


def test_each_replica_goes_next_to_the_partner_replica_it_pairs_with() -> None:
    # The prefill side has a replica in each rack; each decode replica joins its own.
    snapshot = nvl72()
    partner_pods = ("n000", "n001", "n018", "n019")
    partner = Partner("pre", Parallelism(tensor=8, data=2), 4, ORDER, partner_pods)
    req = replace(request(4, role="decode", tensor=8, data=2), partner=partner)
    decision = plan_placement(snapshot, req, GB200, reservations=dict.fromkeys(partner_pods, 4))
    domains = domains_of(snapshot, decision)
    assert domains == ["s0/rg0/r0/d0"] * 2 + ["s0/rg1/r0/d0"] * 2, decision.pods
    assert decision.candidate == "replicas next to their partner"


def test_the_careful_users_level_is_the_finest_that_holds_a_replica() -> None:
    h100 = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=2).nodes
    gb200 = nvl72().nodes
    assert careful_level(request(8, tensor=8, data=2), h100) == "hostname"
    assert careful_level(request(8, tensor=8, pipeline=2, data=2), h100) == "rail-group"
    assert careful_level(request(4, tensor=8, pipeline=2, data=2), gb200) == "rack"


def test_kueues_replica_by_replica_placement_is_a_candidate_the_plan_never_loses_to() -> None:
    # Free trays: 4 in rack 0, 3 in racks 1 and 2. BestFit gives the first TP8xPP2 replica (4
    # trays) rack 0; no rack holds the second, which it cuts 3 + 1: one TP8 group (two trays)
    # across two NVLink domains. fabricfit cuts it between its pipeline stages instead.
    free = {"n014", "n015", "n016", "n017", "n033", "n034", "n035", "n051", "n052", "n053"}
    snapshot = nvl72(racks=3, used={f"n{i:03d}": 4 for i in range(54) if f"n{i:03d}" not in free})
    req = request(4, tensor=8, pipeline=2, data=2)
    layout = build_layout(req.parallelism, 4, ORDER)
    blocks = next(iter(block_ladder(req, layout, 72)))
    domains = build_leaf_domains(snapshot.nodes, 4, {})
    theirs = replica_bestfit(blocks, domains, careful_level(req, snapshot.nodes))
    assert theirs is not None
    tensor_pods = [(2 * i, 2 * i + 1) for i in range(4)]
    assert any(theirs[a].nvlink_domain != theirs[b].nvlink_domain for a, b in tensor_pods)
    decision = plan_placement(snapshot, req, GB200)
    ours = domains_of(snapshot, decision)
    assert all(ours[a] == ours[b] for a, b in tensor_pods), ours
    model = StepModel(snapshot, layout, req, GB200)
    kueue = model.predict(model.rank_slots(theirs))
    assert decision.predicted is not None and decision.predicted.serving is not None
    assert kueue.serving is not None and kueue.serving.decode_token_comm_seconds is not None
    ours_decode = decision.predicted.serving.decode_token_comm_seconds
    assert ours_decode is not None and kueue.serving.decode_token_comm_seconds > 2 * ours_decode
