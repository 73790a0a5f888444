"""kueue-tas mode for a queued LeaderWorkerSet: Kueue builds its groups' Workloads from the
templates once, at creation, so fabricfit never patches it (a patch would roll the groups out
and reach no Workload); one created without fabricfit's annotations is reported with the exact
metadata to create it with, and one created with them is left alone."""

from __future__ import annotations

import asyncio
import json

from fabricfit.reconcile import service
from fabricfit_dev.memapi import merge
from unit.reconcile.test_admission_groups import GROUPS, LWS_API, LWS_PATH, SIZE, lws
from unit.reconcile.world import NAME, NS, World, topology


def tas_world() -> World:
    tt = topology(mode="kueue-tas", pods=GROUPS * SIZE, queueName="team")
    tt["spec"]["workloadRef"] = {"apiVersion": LWS_API, "kind": "LeaderWorkerSet", "name": NAME}
    return World(tt, (LWS_PATH, lws(gated=False)))


def message(world: World) -> str:
    return next(c["message"] for c in world.status()["conditions"] if c["type"] == "Placed")


def test_a_queued_lws_without_the_annotations_is_told_what_to_be_created_with() -> None:
    world = tas_world()
    asyncio.run(service.reconcile(world.body(), world.state, world.views))
    assert world.condition("Planned") == ("True", "Planned")
    assert world.condition("Placed") == ("False", "KueueAnnotationsMissing")
    assert world.api.writes_to(LWS_PATH) == []
    text = message(world)
    assert text.startswith(f"LeaderWorkerSet {NS}/{NAME} lacks the pod-template metadata")
    wanted = json.loads(text.split("merged in: ", 1)[1].rsplit(" (or use", 1)[0])
    templates = wanted["spec"]["leaderWorkerTemplate"]
    for which in ("leaderTemplate", "workerTemplate"):
        annotations = templates[which]["metadata"]["annotations"]
        assert any(k.startswith("kueue.x-k8s.io/podset-") for k in annotations)
        assert templates[which]["metadata"]["labels"]["fabricfit.dev/topology"] == NAME
    # Created again with it merged in: nothing is missing, nothing is patched.
    world.api.put(LWS_PATH, merge(world.api.objects[LWS_PATH], wanted))
    asyncio.run(service.reconcile(world.body(), world.state, world.views))
    assert world.condition("Placed") == ("False", "WaitingForPods")
    assert world.api.writes_to(LWS_PATH) == []
