"""LeaderWorkerSet: pod k = group index · size + worker index; no suspend flag."""

from __future__ import annotations

from fabricfit.workloads.leaderworkerset import LEADERWORKERSET as LWS

SET = {"spec": {"replicas": 2, "leaderWorkerTemplate": {
    "size": 4, "leaderTemplate": {"l": 1}, "workerTemplate": {"w": 1}}}}  # fmt: skip


def labels(group: int, worker: int) -> dict[str, str]:
    return {
        "leaderworkerset.sigs.k8s.io/group-index": str(group),
        "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
    }


def test_groups_times_size() -> None:
    assert LWS.expected_pods(SET) == 8
    assert LWS.local_index(labels(1, 0), SET, None) == 4
    assert LWS.local_index(labels(1, 3), SET, None) == 7
    assert LWS.local_index(labels(0, 4), SET, None) is None


def test_leader_and_worker_podsets() -> None:
    leader, worker = LWS.template_paths(SET)
    assert (LWS.template_pod_count(SET, leader), LWS.template_pod_count(SET, worker)) == (1, 3)
    assert LWS.rank_template(SET) == {"w": 1}
    assert LWS.is_suspended(SET) is None and LWS.unsuspend_patch() is None


def test_pod_specs_freeze_once_a_kueue_queue_name_is_set() -> None:
    base = {"spec": {"leaderWorkerTemplate": {"size": 2}}}
    assert not LWS.pod_spec_frozen(base)
    assert not LWS.pod_spec_frozen({**base, "metadata": {"labels": {"app": "x"}}})
    for where in ("labels", "annotations"):
        queued = {**base, "metadata": {where: {"kueue.x-k8s.io/queue-name": "q"}}}
        assert LWS.pod_spec_frozen(queued)


def test_kueue_makes_one_workload_per_group() -> None:
    assert LWS.kueue_workloads(SET) == 2
    assert LWS.kueue_workloads({"spec": {}}) == 1  # replicas defaults to 1
    assert LWS.kueue_workloads({"spec": {"replicas": -1}}) == 1  # garbage: as one
