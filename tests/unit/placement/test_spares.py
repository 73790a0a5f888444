"""Spare nodes: which trays are spares, that plans never use them, and that they stay put."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.api.models import Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.search import SearchTuning, plan_placement
from fabricfit.placement.spares import (
    NO_SPARES,
    SOURCE_SPEC,
    choose_spares,
    shared_domains,
    spares_for,
    spares_wanted,
)
from unit.placement.clusters import make_cluster

NVL72 = get_profile("gb200-nvl72")
WITH_TWO = dataclasses.replace(NVL72, spare_nodes_per_nvlink_domain=2)


def racks(count: int = 2, trays: int = 18, **kwargs: object) -> ClusterSnapshot:
    """``count`` NVL72 racks (one per rail group) of ``trays`` 4-GPU trays: n000.. per rack."""
    return make_cluster(
        rail_groups_per_spine=count,
        nodes_per_rail_group=trays,
        rack_nodes=trays,
        domain_nodes=trays,
        gpus=4,
        **kwargs,  # type: ignore[arg-type]
    )


def job(data: int, spares: int | None = None, tensor: int = 4) -> PlacementRequest:
    return PlacementRequest(
        parallelism=Parallelism(tensor=tensor, data=data), gpus_per_pod=4, spares_per_domain=spares
    )


def test_the_last_trays_of_each_rack_are_the_spares() -> None:
    spares = choose_spares(racks(), 2, {})
    assert spares.by_domain == {
        "s0/rg0/r0/d0": ("n016", "n017"),
        "s0/rg1/r0/d0": ("n034", "n035"),
    }
    assert spares.nodes == ("n016", "n017", "n034", "n035")
    assert "n017" in spares and "n015" not in spares


def test_the_freest_trays_win_before_names() -> None:
    spares = choose_spares(racks(1, used={"n017": 4, "n016": 1}), 2, {})
    assert spares.nodes == ("n014", "n015")  # whole free trays before n016 (3 free)
    busy = {f"n{i:03d}": 4 for i in range(16)} | {"n016": 1, "n017": 2}
    assert choose_spares(racks(1, used=busy), 2, {}).nodes == ("n016", "n017")
    held = choose_spares(racks(1), 1, {"n017": 4})
    assert held.nodes == ("n016",)  # another plan's reservation counts as used


def test_unavailable_full_and_gpu_less_trays_are_never_spares() -> None:
    spares = choose_spares(racks(1, unavailable=("n017",)), 2, {})
    assert spares.nodes == ("n015", "n016")
    snapshot = racks(1)
    nodes = tuple(dataclasses.replace(n, gpus=0, free_gpus=0) if n.name == "n016" else n
                  for n in snapshot.nodes)  # fmt: skip
    assert choose_spares(ClusterSnapshot(nodes), 2, {}).nodes == ("n015", "n017")
    full = {f"n{i:03d}": 4 for i in range(17)}
    assert choose_spares(racks(1, used=full), 2, {}).nodes == ("n017",)


def test_single_node_domains_have_no_spares() -> None:
    hgx = make_cluster()
    assert shared_domains(hgx) == {}
    assert choose_spares(hgx, 1, {}).nodes == ()


def test_zero_spares_is_none() -> None:
    spares = choose_spares(racks(), 0, {})
    assert spares.nodes == () and spares.per_domain == 0


def test_a_domain_smaller_than_the_count_is_all_spares() -> None:
    assert choose_spares(racks(1, trays=3), 5, {}).nodes == ("n000", "n001", "n002")


def test_spec_overrides_the_profile() -> None:
    assert spares_wanted(job(2), NVL72) == (0, "")
    assert spares_wanted(job(2), WITH_TWO) == (2, "fabric gb200-nvl72")
    assert spares_wanted(job(2, spares=1), WITH_TWO) == (1, SOURCE_SPEC)
    assert spares_wanted(job(2, spares=0), WITH_TWO) == (0, SOURCE_SPEC)


def test_spares_are_picked_only_where_the_job_can_go() -> None:
    """A rack of another pool (nodeSelector not matched) holds none of this job's spares."""
    snapshot = racks()
    pools = {
        d: f"p{i}" for i, d in enumerate(sorted({n.place.nvlink_domain for n in snapshot.nodes}))
    }
    nodes = tuple(
        dataclasses.replace(n, labels={**n.labels, "pool": pools[n.place.nvlink_domain]})
        for n in snapshot.nodes
    )
    snapshot = dataclasses.replace(snapshot, nodes=nodes)
    request = dataclasses.replace(job(2, spares=2), node_selector={"pool": "p1"})
    spares = spares_for(snapshot, request, NVL72, {})
    (home,) = {n.place.nvlink_domain for n in nodes if n.labels["pool"] == "p1"}
    assert list(spares.by_domain) == [home]
    assert len(spares.nodes) == 2
    decision = plan_placement(snapshot, request, NVL72)
    assert decision.feasible and not set(decision.pods) & set(spares.nodes)
    assert len(choose_spares(snapshot, 2, {}).by_domain) == 2  # without a job: every rack


def test_json_shape() -> None:
    spares = spares_for(racks(1), job(2), WITH_TWO, {})
    assert spares.to_json_dict() == {
        "per_nvlink_domain": 2,
        "source": "fabric gb200-nvl72",
        "nodes": ["n016", "n017"],
        "by_nvlink_domain": {"s0/rg0/r0/d0": ["n016", "n017"]},
    }
    assert NO_SPARES.to_json_dict()["nodes"] == []


def test_a_plan_never_uses_spares_and_reports_them() -> None:
    decision = plan_placement(racks(), job(16), WITH_TWO)
    assert decision.feasible
    assert not set(decision.pods) & set(decision.spares.nodes)
    assert decision.spares.nodes == ("n016", "n017", "n034", "n035")
    # 16 trays: the whole rack minus its two spares, so every tensor group keeps NVLink.
    assert {p[:3] for p in decision.pods} <= {"n00", "n01"}
    assert len(set(decision.pods)) == 16


def test_without_spares_the_same_job_may_use_every_tray() -> None:
    decision = plan_placement(racks(1), job(18), NVL72)
    assert decision.feasible and len(set(decision.pods)) == 18
    with_spares = plan_placement(racks(1), job(18), WITH_TWO)
    assert not with_spares.feasible
    assert any("2 kept free as spares (2 per NVLink domain)" in r for r in with_spares.reasons)


def test_spec_zero_lets_a_job_use_the_spares() -> None:
    decision = plan_placement(racks(1), job(18, spares=0), WITH_TWO)
    assert decision.feasible and decision.spares.nodes == ()


def test_infeasible_layouts_still_report_spares() -> None:
    decision = plan_placement(racks(1), job(1, tensor=144), WITH_TWO)
    assert not decision.feasible and decision.spares.nodes == ("n016", "n017")


@st.composite
def nvl_clusters(draw: st.DrawFn) -> tuple[ClusterSnapshot, int]:
    count = draw(st.integers(1, 3))
    trays = draw(st.integers(2, 18))
    names = [f"n{i:03d}" for i in range(count * trays)]
    used = {n: draw(st.integers(0, 4)) for n in names if draw(st.booleans())}
    down = tuple(n for n in names if draw(st.integers(0, 9)) == 0)
    return racks(count, trays, used=used, unavailable=down), draw(st.integers(0, 4))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nvl_clusters())
def test_spare_choice_properties(case: tuple[ClusterSnapshot, int]) -> None:
    snapshot, count = case
    spares = choose_spares(snapshot, count, {})
    for domain, nodes in shared_domains(snapshot).items():
        usable = [n for n in nodes if n.available and n.free_gpus > 0]
        picked = spares.by_domain.get(domain, ())
        assert len(picked) == min(count, len(usable))
        assert all(snapshot.node(n).available for n in picked)
        # No usable non-spare of the domain is freer than a spare.
        rest = [n for n in usable if n.name not in picked]
        least = min((snapshot.node(n).free_gpus for n in picked), default=4)
        assert all(n.free_gpus <= least for n in rest)
    more = choose_spares(snapshot, count + 1, {})
    assert set(spares.nodes) <= set(more.nodes)  # one more spare never swaps the others
    assert choose_spares(snapshot, count, {}) == spares


def _after(snapshot: ClusterSnapshot, pods: tuple[str, ...], gpus_per_pod: int) -> ClusterSnapshot:
    taken = Counter(pods)
    return ClusterSnapshot(
        tuple(
            dataclasses.replace(n, free_gpus=n.free_gpus - taken[n.name] * gpus_per_pod)
            for n in snapshot.nodes
        )
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nvl_clusters(), st.integers(1, 8))
def test_plans_avoid_spares_and_leave_them_spares(
    case: tuple[ClusterSnapshot, int], data: int
) -> None:
    """Placing a job never touches a spare, and the spares of the cluster with the job
    running are the same nodes: the choice is stable from one reconcile to the next."""
    snapshot, count = case
    request = job(data, spares=count)
    decision = plan_placement(snapshot, request, NVL72, tuning=SearchTuning(move_budget=50))
    before = spares_for(snapshot, request, NVL72, {})
    assert decision.spares.nodes == before.nodes
    # Spares are nodes that could take one of the job's pods: a tray with fewer free GPUs than
    # a pod needs is never one.
    assert all(snapshot.node(n).free_gpus >= request.gpus_per_pod for n in before.nodes)
    if not decision.feasible:
        return
    assert not set(decision.pods) & set(before.nodes)
    after = spares_for(_after(snapshot, decision.pods, 4), request, NVL72, {})
    assert after.nodes == before.nodes


@pytest.mark.parametrize("count", [1, 2])
def test_reserved_plans_of_others_keep_spares_stable(count: int) -> None:
    """A second job planned while the first is only reserved sees the same spares."""
    snapshot = racks()
    first = plan_placement(snapshot, job(8, spares=count), NVL72)
    held = Counter({n: 4 * c for n, c in Counter(first.pods).items()})
    second = plan_placement(snapshot, job(8, spares=count), NVL72, reservations=held)
    assert first.spares.nodes == second.spares.nodes
    assert second.feasible and not set(second.pods) & set(first.pods)
    assert not set(second.pods) & set(second.spares.nodes)
