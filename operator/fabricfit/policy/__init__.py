"""Decisions about a job before and around its plan (pure).

* :mod:`~fabricfit.policy.spec` — the one path from a TrainingTopology spec and its workload to
  a ``PlacementRequest`` (an :class:`Admission`), shared by ``fabricfit plan`` and the operator;
  re-exported here, so callers write ``policy.admit(...)``.
* :mod:`~fabricfit.policy.kueuecheck` — fabricfit as a Kueue AdmissionCheck controller: reading
  a Kueue Workload and deciding the check's answer; :mod:`~fabricfit.policy.kueuejob` — a job's
  several Workloads (one per LeaderWorkerSet group) decided together.
"""

from fabricfit.policy.spec import (
    Admission,
    ClaimObjects,
    admit,
    admit_workload,
    build_request,
    choose_fabric,
    describe_validation_error,
    parse_spec,
    rank_template,
    settle_gpus_per_pod,
    workload_problems,
)

__all__ = [
    "Admission",
    "ClaimObjects",
    "admit",
    "admit_workload",
    "build_request",
    "choose_fabric",
    "describe_validation_error",
    "parse_spec",
    "rank_template",
    "settle_gpus_per_pod",
    "workload_problems",
]
