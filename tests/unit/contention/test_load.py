"""The link load: an immutable sum of running jobs' average loads, exact under add/remove."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.contention import (
    LEAF,
    NIC,
    SPINE,
    UP,
    DimensionTraffic,
    JobTraffic,
    Link,
    LinkCapacities,
    LinkLoad,
    busiest_by_place,
)

LINKS = [Link(LEAF, f"rg{i}", r, UP) for i in range(3) for r in range(2)] + [Link(NIC, "n0", 0, UP)]


def job(key: str, amounts: dict[Link, float], step: float = 2.0, net: float = 0.5) -> JobTraffic:
    return JobTraffic(key, 8, step, (DimensionTraffic("data", net, amounts),))


def test_a_job_knows_its_average_load_and_its_peak_per_dimension() -> None:
    link = LINKS[0]
    traffic = JobTraffic(
        "a",
        16,
        4.0,
        (DimensionTraffic("expert", 0.5, {link: 10.0}), DimensionTraffic("data", 1.0, {link: 6.0})),
    )
    assert traffic.average(link) == pytest.approx(16.0 / 4.0)
    assert traffic.links[link][1] == ((0, 20.0), (1, 6.0))
    with pytest.raises(ValueError, match="step seconds"):
        JobTraffic("b", 8, 0.0, ())


def test_add_and_remove_return_new_loads() -> None:
    empty = LinkLoad()
    one = empty.add(job("a", {LINKS[0]: 4.0}))
    two = one.add(job("b", {LINKS[0]: 2.0, LINKS[6]: 1.0}))
    assert len(empty) == 0 and empty.load(LINKS[0]) == 0.0
    assert one.load(LINKS[0]) == pytest.approx(2.0)
    assert two.load(LINKS[0]) == pytest.approx(3.0)
    assert two.users(LINKS[0]) == ("a", "b") and two.nic_nodes == frozenset({"n0"})
    back = two.remove("b")
    assert back.load(LINKS[0]) == pytest.approx(2.0) and back.nic_nodes == frozenset()
    assert back.users(LINKS[6]) == () and "b" not in back and "b" in two
    assert back.remove("nobody") is back
    with pytest.raises(ValueError, match="already"):
        two.add(job("a", {}))


@given(
    st.lists(
        st.tuples(
            st.sampled_from("abcdef"),
            st.dictionaries(st.sampled_from(LINKS), st.floats(0.0, 100.0), max_size=4),
            st.booleans(),
        ),
        max_size=25,
    )
)
def test_any_history_equals_the_jobs_left_added_from_scratch(
    history: list[tuple[str, dict[Link, float], bool]],
) -> None:
    """Adding and removing in any order never drifts from the sum of the jobs running."""
    load = LinkLoad()
    running: dict[str, JobTraffic] = {}
    for key, amounts, add in history:
        if add and key not in running:
            running[key] = job(key, amounts)
            load = load.add(running[key])
        elif not add:
            running.pop(key, None)
            load = load.remove(key)
    fresh = LinkLoad()
    for traffic in running.values():
        fresh = fresh.add(traffic)
    assert set(load.jobs) == set(running)
    for link in LINKS:
        assert load.load(link) == pytest.approx(fresh.load(link), abs=1e-9)
        assert set(load.users(link)) == set(fresh.users(link))
    assert dict(load.links()).keys() == dict(fresh.links()).keys()


def test_the_busiest_link_per_rail_group_and_spine_block() -> None:
    caps = LinkCapacities(
        nic_bytes_per_s=10.0,
        leaf_bytes_per_s={("rg0", 0): 4.0, ("rg0", 1): 8.0},
        spine_bytes_per_s={"s0": 100.0},
        node_leaf_bytes_per_s=1.0,
    )
    load = LinkLoad().add(
        job("a", {LINKS[0]: 2.0, LINKS[1]: 4.0, Link(SPINE, "s0", -1, UP): 40.0, LINKS[6]: 8.0})
    )  # average = amount / 2 s
    assert busiest_by_place(load, caps) == {("leaf", "rg0"): 0.25, ("spine", "s0"): 0.2}
    assert busiest_by_place(load, caps, (NIC,)) == {("nic", "n0"): 0.4}
