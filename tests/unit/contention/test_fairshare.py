"""Max-min fair share: a job's slowdown on shared links, and what it adds to running jobs."""

from __future__ import annotations

import pytest

from fabricfit.contention import (
    LEAF,
    UP,
    DimensionTraffic,
    JobTraffic,
    Link,
    LinkCapacities,
    LinkLoad,
    added_slowdown,
    factors_before,
    gpu_seconds,
    own_slowdown,
    slowdown_factor,
)

A, B = Link(LEAF, "rg0", 0, UP), Link(LEAF, "rg1", 0, UP)
CAPS = LinkCapacities(
    nic_bytes_per_s=50.0,
    leaf_bytes_per_s={("rg0", 0): 100.0, ("rg1", 0): 100.0},
    spine_bytes_per_s={},
    node_leaf_bytes_per_s=25.0,
)


def running(key: str, amounts: dict[Link, float], step: float, net: float = 1.0) -> JobTraffic:
    return JobTraffic(key, 8, step, (DimensionTraffic("data", net, amounts),))


@pytest.mark.parametrize(
    ("demand", "others", "factor"),
    [(60.0, 0.0, 1.0), (60.0, 40.0, 1.0), (60.0, 60.0, 1.2), (150.0, 0.0, 1.5)],
)
def test_slowdown_factor(demand: float, others: float, factor: float) -> None:
    assert slowdown_factor(demand, others, 100.0) == pytest.approx(factor)


def test_a_job_slows_by_the_neighbours_average_load_on_its_busiest_link() -> None:
    # the neighbour pushes 80 B/s for a quarter of its step: 20 B/s on average
    load = LinkLoad().add(running("k", {A: 80.0}, step=4.0))
    dim = DimensionTraffic("data", 2.0, {A: 180.0, B: 20.0})  # demands 90 and 10 B/s
    assert own_slowdown(dim, load, CAPS) == pytest.approx(2.0 * (110 / 100 - 1))
    assert own_slowdown(dim, LinkLoad(), CAPS) == 0.0


def test_a_job_that_saturates_another_link_itself_loses_nothing_to_quiet_neighbours() -> None:
    load = LinkLoad().add(running("k", {A: 20.0}, step=1.0))
    dim = DimensionTraffic("data", 1.0, {A: 50.0, B: 150.0})  # B alone is its pace: 1.5
    assert own_slowdown(dim, load, CAPS) == 0.0


def test_the_slowdown_added_to_a_running_job() -> None:
    k = running("k", {A: 90.0}, step=2.0, net=1.0)  # peak 90 B/s, average 45 B/s
    load = LinkLoad().add(k)
    before = {"k": factors_before(k, load, CAPS)}
    assert before["k"] == [1.0]
    # a newcomer averaging 30 B/s on A: k's flows see 90 + 30 over 100
    added = added_slowdown([(A, 30.0), (B, 50.0)], load, CAPS, before.__getitem__)
    assert added == {"k": pytest.approx(1.0 * (1.2 - 1.0))}
    # its GPUs lose that per its own step; during a 4 s step of the newcomer it runs 2 steps
    assert gpu_seconds(added, load, 4.0) == pytest.approx(0.2 * 8 * 2)
    assert added_slowdown([(B, 50.0)], load, CAPS, before.__getitem__) == {}
