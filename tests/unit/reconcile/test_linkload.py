"""The operator's link load follows the recorded plans: added, replaced, removed, rebuilt."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.profiles.catalog import Catalog
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.reconcile.inventory import Holding, holding_of
from fabricfit.reconcile.linkload import RunningTraffic, job_key
from fabricfit_dev.cluster import fakenodes

FABRIC = "h100-leaf-spine-2to1"
PROFILE = get_profile(FABRIC)
CATALOG = Catalog()
# Communication-heavy: a 20B model's gradients over few tokens per step.
MODEL = {"parameters": 20_000_000_000, "hiddenSize": 6144, "layers": 44, "sequenceLength": 256,
         "microBatchSize": 1, "microBatches": 1, "bytesPerElement": 2}  # fmt: skip


def cluster() -> ClusterSnapshot:
    fabric = fakenodes.FakeFabric(
        prefix="l", spines=2, rail_groups_per_spine=3, nodes_per_rail_group=2, fabric=FABRIC
    )
    nodes = [fakenodes.as_ready(m) for m in fakenodes.node_manifests(fabric)]
    return build_snapshot(nodes, [], scheme="auto", default_fabric="dgx-h100")


SNAPSHOT = cluster()
NODES = [n.name for n in SNAPSHOT.nodes]  # spine 0: rg-0 0-1, rg-1 2-3, rg-2 4-5; spine 1: 6-11


def tt(name: str, pods: list[str], *, generation: int = 1, **spec: Any) -> dict[str, Any]:
    """A TrainingTopology (TP8 × DP len(pods)) whose status records ``pods`` as its plan."""
    body = {
        "metadata": {"namespace": "ns", "name": name, "generation": generation,
                     "resourceVersion": "1"},
        "spec": {"workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": name},
                 "gpusPerPod": 8, "parallelism": {"tensor": 8, "data": max(len(pods), 1)},
                 "model": MODEL, **spec},
        "status": {"observedGeneration": generation, "gpusPerPod": 8, "fabric": FABRIC,
                   "pods": [{"index": i, "node": n} for i, n in enumerate(pods)],
                   "predicted": {"stepCommSeconds": 0.3}},
    }  # fmt: skip
    return body


def holdings(*bodies: dict[str, Any]) -> dict[tuple[str, str], Holding]:
    return {("ns", b["metadata"]["name"]): holding_of(b) for b in bodies}


def sync(traffic: RunningTraffic, *bodies: dict[str, Any], snapshot: ClusterSnapshot = SNAPSHOT):
    return traffic.sync(holdings(*bodies), snapshot, CATALOG, PROFILE)


CROSSING = [NODES[0], NODES[1], NODES[2]]  # rg-0 and rg-1 of spine 0: its ring climbs


def test_a_plan_crossing_rail_groups_adds_its_traffic_one_under_its_leaf_nothing() -> None:
    traffic = RunningTraffic()
    load = sync(traffic, tt("a", CROSSING), tt("b", [NODES[6], NODES[7]]))
    assert set(load.jobs) == {"ns/a"}  # b stays under its rail leaf (whole nodes, one group)
    places = {link.place for link, _ in load.links()}
    assert places == {"spine-0/rg-0", "spine-0/rg-1"}
    assert all(load.users(link) == ("ns/a",) for link, _ in load.links())


def test_an_unchanged_plan_is_not_derived_again() -> None:
    traffic = RunningTraffic()
    first = sync(traffic, tt("a", CROSSING))
    derived = traffic.derived
    again = sync(traffic, tt("a", CROSSING))
    assert traffic.derived == derived and again is first


def test_a_re_plan_replaces_and_a_dropped_or_deleted_plan_removes() -> None:
    traffic = RunningTraffic()
    sync(traffic, tt("a", CROSSING), tt("c", [NODES[6], NODES[8], NODES[9]]))
    moved = sync(traffic, tt("a", [NODES[3], NODES[4], NODES[5]]), tt("c", [NODES[6], NODES[8],
                                                                          NODES[9]]))  # fmt: skip
    assert {link.place for link in moved.job("ns/a").links} == {"spine-0/rg-1", "spine-0/rg-2"}
    dropped = sync(traffic, tt("a", []), tt("c", [NODES[6], NODES[8], NODES[9]]))
    assert set(dropped.jobs) == {"ns/c"}
    deleted = sync(traffic)
    assert len(deleted) == 0 and not list(deleted.links())


def test_the_load_rebuilt_after_a_restart_equals_the_one_kept_incrementally() -> None:
    bodies = [tt("a", CROSSING), tt("c", [NODES[6], NODES[8], NODES[9]])]
    kept = RunningTraffic()
    sync(kept, bodies[0])
    sync(kept, *bodies)
    rebuilt = sync(RunningTraffic(), *bodies)
    assert dict(rebuilt.links()) == pytest.approx(dict(kept.load.links()))
    assert set(rebuilt.jobs) == set(kept.load.jobs) == {"ns/a", "ns/c"}


def test_only_jobs_whose_nodes_moved_are_derived_again_when_the_facts_change() -> None:
    traffic = RunningTraffic()
    sync(traffic, tt("a", CROSSING), tt("c", [NODES[6], NODES[8], NODES[9]]))
    derived = traffic.derived
    # Node 9 moves to another rail group: only c runs on it.
    nodes = tuple(
        replace(n, place=replace(n.place, rail_group="spine-1/rg-5")) if n.name == NODES[9] else n
        for n in SNAPSHOT.nodes
    )
    relabelled = replace(SNAPSHOT, nodes=nodes)
    assert relabelled.facts_token is not SNAPSHOT.facts_token
    load = sync(traffic, tt("a", CROSSING), tt("c", [NODES[6], NODES[8], NODES[9]]),
                snapshot=relabelled)  # fmt: skip
    assert traffic.derived == derived + 1
    assert "spine-1/rg-5" in {link.place for link in load.job("ns/c").links}


def test_a_spec_without_gpus_per_pod_takes_the_status_s_and_a_bad_spec_adds_nothing() -> None:
    body = tt("a", CROSSING)
    del body["spec"]["gpusPerPod"]
    assert "ns/a" in sync(RunningTraffic(), body).jobs
    broken = tt("a", CROSSING, parallelism={"tensor": 3, "data": 3})
    assert len(sync(RunningTraffic(), broken)) == 0
    gone = tt("a", [*CROSSING[:2], "no-such-node"])
    assert len(sync(RunningTraffic(), gone)) == 0


def test_job_key_is_namespace_slash_name() -> None:
    assert job_key(("team", "llama")) == "team/llama"


def planned_spines(others: dict[tuple[str, str], Holding]) -> tuple[set[str], dict[str, Any]]:
    """Reconcile a 3-pod job next to ``others``; the spines of its plan and its prediction."""
    import asyncio

    from fabricfit.reconcile import service
    from fabricfit.reconcile.inventory import slim_node
    from unit.reconcile.world import JOB_PATH, World, job, topology

    world = World(topology(pods=3, model=MODEL, fabric=FABRIC), (JOB_PATH, job(3)))
    fabric = fakenodes.FakeFabric(
        prefix="l", spines=2, rail_groups_per_spine=3, nodes_per_rail_group=2, fabric=FABRIC
    )
    world.nodes = [slim_node(fakenodes.as_ready(m)) for m in fakenodes.node_manifests(fabric)]
    world.others = others
    outcome = asyncio.run(service.reconcile(world.body(), world.state, world.views))
    by_name = {n.name: n.place.spine for n in SNAPSHOT.nodes}
    return {by_name[n] for n in outcome.plan.pods}, world.status()["predicted"]


def test_the_operator_plans_a_tying_job_away_from_the_spine_a_running_job_loads() -> None:
    alone, quiet = planned_spines({})
    assert alone == {"spine-0"}  # the tightest fit, alone
    assert quiet["neighbourSlowdownSeconds"] == 0.0
    assert quiet["aloneStepCommSeconds"] == quiet["stepCommSeconds"]
    running = tt("a", CROSSING)
    running["status"]["reservation"] = [{"node": n, "gpus": 8} for n in CROSSING]
    steered, predicted = planned_spines(holdings(running))
    assert steered == {"spine-1"}
    assert predicted["stepCommSeconds"] == pytest.approx(quiet["stepCommSeconds"])
    assert predicted["slowdownAddedToOthersSeconds"] == 0.0
