"""Re-placement with spares: a spare of the lost pod's own rack first, other racks' spares last."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.api.models import Parallelism
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.layout import build_layout
from fabricfit.placement.replace import (
    FOREIGN_SPARE,
    HOME_SPARE,
    ORDINARY,
    home_domain,
    replace_pods,
    tier_of,
)
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.spares import choose_spares
from unit.placement.clusters import make_cluster

NVL72 = get_profile("gb200-nvl72")
RACK0, RACK1 = "s0/rg0/r0/d0", "s0/rg1/r0/d0"


def request(pods: int, spares: int | None = 2) -> PlacementRequest:
    """TP 8 over 4-GPU trays: every tensor group spans two trays of one rack."""
    return PlacementRequest(
        parallelism=Parallelism(tensor=8, data=pods // 2),
        gpus_per_pod=4,
        spares_per_domain=spares,
    )


def racks(
    used: dict[str, int], unavailable: tuple[str, ...] = (), gone: tuple[str, ...] = ()
) -> ClusterSnapshot:
    """Two NVL72 racks, n000-n017 and n018-n035 (one rail group each)."""
    snapshot = make_cluster(
        rail_groups_per_spine=2,
        nodes_per_rail_group=18,
        rack_nodes=18,
        domain_nodes=18,
        gpus=4,
        used=used,
        unavailable=unavailable,
    )
    return ClusterSnapshot(tuple(n for n in snapshot.nodes if n.name not in gone))


def names(first: int, last: int) -> list[str]:
    return [f"n{i:03d}" for i in range(first, last + 1)]


def running(pods: list[str], extra: tuple[str, ...] = ()) -> dict[str, int]:
    """``used`` for a job on ``pods`` (4 GPUs each) plus full tenant trays ``extra``."""
    return {n: 4 for n in (*pods, *extra)}


def test_a_lost_tray_goes_to_a_spare_of_its_rack_before_a_free_ordinary_tray() -> None:
    pods = names(0, 13)  # 14 trays; n014 and n015 stay free but are not spares
    snapshot = racks(running(pods), unavailable=("n003",))
    assert choose_spares(snapshot, 2, {}).by_domain[RACK0] == ("n016", "n017")
    result = replace_pods(snapshot, request(14), NVL72, pods, {3}, reservations={})
    assert result is not None
    assert result.moved == {3: "n016"}
    assert result.home_domains == {3: RACK0} and result.to_spare(3)


def test_a_deleted_tray_finds_its_rack_from_its_tensor_peers() -> None:
    pods = names(0, 13)
    snapshot = racks(running([p for p in pods if p != "n003"]), gone=("n003",))
    layout = build_layout(Parallelism(tensor=8, data=7), 4, "tp-cp-ep-dp-pp")
    assert home_domain(snapshot, layout, pods, 3) == RACK0
    result = replace_pods(snapshot, request(14), NVL72, pods, {3}, reservations={})
    assert result is not None and result.moved == {3: "n016"} and result.to_spare(3)


def test_without_spares_the_cheapest_tray_wins_as_before() -> None:
    pods = names(0, 13)
    snapshot = racks(running(pods), unavailable=("n003",))
    result = replace_pods(snapshot, request(14, spares=0), NVL72, pods, {3}, reservations={})
    assert result is not None and result.moved == {3: "n014"} and not result.to_spare(3)


def test_with_no_spare_left_at_home_an_ordinary_tray_beats_another_racks_spare() -> None:
    pods = names(0, 15)
    snapshot = racks(running(pods, extra=("n016", "n017")), unavailable=("n003",))
    spares = choose_spares(snapshot, 2, {})
    assert RACK0 not in spares.by_domain and spares.by_domain[RACK1] == ("n034", "n035")
    result = replace_pods(snapshot, request(16), NVL72, pods, {3}, reservations={})
    assert result is not None and result.moved == {3: "n018"} and not result.to_spare(3)


def test_another_racks_spare_is_the_last_resort() -> None:
    pods = names(0, 15)
    tenants = ("n016", "n017", *names(18, 33))
    snapshot = racks(running(pods, extra=tenants), unavailable=("n003",))
    result = replace_pods(snapshot, request(16), NVL72, pods, {3}, reservations={})
    assert result is not None and result.moved == {3: "n034"} and not result.to_spare(3)


def test_two_lost_trays_take_both_spares_of_their_rack() -> None:
    pods = names(0, 15)
    snapshot = racks(running(pods), unavailable=("n003", "n010"))
    result = replace_pods(snapshot, request(16), NVL72, pods, {3, 10}, reservations={})
    assert result is not None
    assert sorted(result.moved.values()) == ["n016", "n017"]
    assert result.to_spare(3) and result.to_spare(10)


def test_tiers() -> None:
    snapshot = racks({})
    spares = choose_spares(snapshot, 2, {})
    assert tier_of(snapshot.node("n017"), spares, RACK0) == HOME_SPARE
    assert tier_of(snapshot.node("n035"), spares, RACK0) == FOREIGN_SPARE
    assert tier_of(snapshot.node("n035"), spares, None) == FOREIGN_SPARE
    assert tier_of(snapshot.node("n001"), spares, RACK0) == ORDINARY


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(2, 8).map(lambda n: 2 * n),
    st.sets(st.integers(0, 15), min_size=1, max_size=2),
    st.sets(st.integers(16, 35), max_size=12),
    st.integers(0, 3),
)
def test_replacement_properties(
    pods_count: int, lost_at: set[int], tenants: set[int], count: int
) -> None:
    """Every lost pod moves to a healthy node with room, never onto a node a healthy pod of
    the job or a tenant fills; when its rack has a usable spare it gets one of those."""
    pods = names(0, pods_count - 1)
    lost = {i for i in lost_at if i < pods_count}
    if not lost:
        return
    down = tuple(pods[i] for i in lost)
    snapshot = racks(running(pods, extra=tuple(f"n{t:03d}" for t in tenants)), unavailable=down)
    spares = choose_spares(snapshot, count, {})
    result = replace_pods(snapshot, request(pods_count, count), NVL72, pods, lost, reservations={})
    home_spares = spares.by_domain.get(RACK0, ())
    if result is None:
        free = [n for n in snapshot.nodes if n.available and n.free_gpus >= 4]
        assert len(free) < len(lost)
        return
    assert set(result.moved) == lost
    per_node = Counter(result.pods)
    for node in result.moved.values():
        info = snapshot.node(node)
        assert info.available and node not in down
        assert per_node[node] * 4 <= info.free_gpus + (4 if node in pods else 0)
    at_home = [i for i in sorted(lost) if result.to_spare(i)]
    assert len(at_home) == min(len(lost), len(home_spares))
    ordinary = [
        n for n in snapshot.nodes if n.available and n.free_gpus >= 4 and n.name not in spares
    ]
    if len(ordinary) + len(home_spares) >= len(lost):  # another rack's spare only as last resort
        foreign = set(spares.by_domain.get(RACK1, ()))
        assert not set(result.moved.values()) & foreign, result.moved
    assert all(result.pods[i] == pods[i] for i in range(pods_count) if i not in lost)
    again = replace_pods(snapshot, request(pods_count, count), NVL72, pods, lost, reservations={})
    assert again == result


def test_replacement_reports_the_spares_it_saw() -> None:
    pods = names(0, 13)
    snapshot = racks(running(pods), unavailable=("n003",))
    result = replace_pods(snapshot, request(14), NVL72, pods, {3}, reservations={})
    assert result is not None
    assert result.spares.per_domain == 2
    assert result.spares.nodes == ("n016", "n017", "n034", "n035")
