"""High availability: two replicas with the chart's peering settings (``--priority oldest``, the
peering CRDs from the chart, the peering object created by the operator itself). The active
replica is killed (SIGKILL, no goodbye) in the middle of a burst; the standby takes over and
finishes the burst: every job placed, no GPU double-booked, no pod pinned twice.

Prints the takeover time (kill → the standby resumes) and the time from the kill to the last job
Placed. Marked ``slow`` (``make test-slow``): the takeover waits for the dead replica's peering
lease to lapse. ``make test`` keeps the takeover path through a clean exit
(``test_load.py::test_two_replicas_with_peering_only_one_acts``).
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fabricfit_dev.e2e.objects import TT, make_pool, placed_names, planned, submit_job, wait_bound
from fabricfit_dev.e2e.peering import apply_peering_crds, peers_of
from fabricfit_dev.e2e.reliability import (
    MeteredOperator,
    audit_events,
    audit_offset,
    by_operator,
    gpus_in_use,
    state_directory,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

BURST_JOBS = 24
KILL_AFTER_PLACED = 8


def pins_per_pod(offset: int, namespace: str) -> Counter[str]:
    """Successful pod PATCHes by the operator since ``offset``, per pod of ``namespace``."""
    directory = state_directory()
    assert directory is not None
    pins: Counter[str] = Counter()
    for event in audit_events(directory, offset):
        ref = event.get("objectRef") or {}
        if (
            event.get("verb") == "patch"
            and ref.get("resource") == "pods"
            and not ref.get("subresource")
            and ref.get("namespace") == namespace
            and by_operator(event)
            and 200 <= int((event.get("responseStatus") or {}).get("code") or 0) < 300
        ):
            pins[ref["name"]] += 1  # fmt: skip
    return pins


@pytest.mark.slow  # the dead replica's peering lease must lapse first
def test_standby_takes_over_when_the_active_replica_is_killed_mid_burst(
    operator: OperatorProcess,
    kubeconfig: Path,
    kubectl: list[str],
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    nodes = {n["metadata"]["name"] for n in make_pool(core, "ha64", nodes_per_rail_group=16,
                                                        rail_groups_per_spine=4)}  # fmt: skip
    apply_peering_crds(kubectl, tmp_path)
    name = f"ha-{uuid.uuid4().hex[:6]}"
    directory = state_directory()
    offset = audit_offset(directory) if directory else 0
    operator.stop()  # the session's standalone operator would act regardless of peering
    peering = ("--peering", name, "--priority", "oldest")
    active = MeteredOperator(kubeconfig, tmp_path / "active", *peering)
    standby = MeteredOperator(kubeconfig, tmp_path / "standby", *peering)
    try:
        active.start()
        standby.start()
        wait_for(lambda: len(peers_of(kubectl, name)) == 2, 60, what="both replicas peered")
        rng = random.Random(14)
        sizes = [rng.choice([1, 2, 2, 4]) for _ in range(BURST_JOBS)]
        assert sum(sizes) <= len(nodes)
        for i, pods in enumerate(sizes):
            submit_job(batch, custom, namespace, f"h{i}", pods=pods, pool="ha64",
                       parallelism={"tensor": 8, "data": pods})  # fmt: skip
        wait_for(lambda: len(placed_names(custom, namespace)) >= KILL_AFTER_PLACED, 120, 0.2,
                 what=f"{KILL_AFTER_PLACED} jobs placed by the active replica")  # fmt: skip
        assert not standby.writes(), f"the standby acted: {standby.writes()}"
        before_kill = len(placed_names(custom, namespace))
        killed_at = time.monotonic()
        active.stop(signal.SIGKILL)
        wait_for(lambda: "Resuming operations" in standby.logs(), 90, 0.1, what="takeover")
        takeover_seconds = time.monotonic() - killed_at
        wait_for(lambda: len(placed_names(custom, namespace)) == BURST_JOBS, 180, 0.5,
                 what="the standby to finish the burst")  # fmt: skip
        finish_seconds = time.monotonic() - killed_at

        used = gpus_in_use(core, nodes)
        assert all(v <= 8 for v in used.values()), f"GPUs double-booked: {used}"
        assert sum(used.values()) == 8 * sum(sizes)
        for i, pods in enumerate(sizes):
            tt = custom.get_namespaced_custom_object(*TT[:2], namespace, TT[2], f"h{i}")
            bound = wait_bound(core, namespace, f"h{i}", pods)
            assert [bound[k].spec.node_name for k in sorted(bound)] == planned(tt)
        if directory is not None:
            pins = pins_per_pod(offset, namespace)
            assert pins and max(pins.values()) == 1, pins.most_common(3)
        assert any(k[0] == "PATCH" for k in standby.requests())
        print(
            f"\n[ha] killed the active replica with {before_kill}/{BURST_JOBS} jobs placed; "
            f"standby resumed after {takeover_seconds:.1f} s, burst finished "
            f"{finish_seconds:.1f} s after the kill"
        )
    finally:
        active.stop()
        standby.stop()
        subprocess.run([*kubectl, "delete", "clusterkopfpeering", name],
                       capture_output=True, check=False)  # fmt: skip
        operator.start()
