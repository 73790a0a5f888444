"""Read-backs of Kueue Workloads and AdmissionChecks shared by the admission-check e2e tests."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from fabricfit_dev.e2e import kueue


def check_entry(workload: Mapping[str, Any], check: str) -> dict[str, Any] | None:
    """The Workload's admissionChecks entry ``check`` (Kueue adds the list after QuotaReserved)."""
    for entry in (workload.get("status") or {}).get("admissionChecks") or []:
        if entry["name"] == check:
            return dict(entry)
    return None


def check_state(workload: Mapping[str, Any], check: str) -> dict[str, Any]:
    found = check_entry(workload, check)
    assert found is not None, f"Workload has no check {check}: {workload.get('status')}"
    return found


def seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def bound_at(pod: Any) -> float:
    """When kube-scheduler bound the pod (PodScheduled=True, server time, 1 s resolution)."""
    (scheduled,) = [c for c in pod.status.conditions or [] if c.type == "PodScheduled"]
    return float(scheduled.last_transition_time.timestamp())


def report_latency(
    label: str, workload: Mapping[str, Any], pods: dict[int, Any], wall: float
) -> None:
    """Print Workload creation -> every pod bound, split at Kueue's QuotaReserved (Kueue's
    share, preemption included) and at Admitted (fabricfit's plan and Ready, then Kueue)."""
    created = seconds(workload["metadata"]["creationTimestamp"])
    stamps = {c["type"]: seconds(c["lastTransitionTime"]) for c in workload["status"]["conditions"]}
    last = max(bound_at(p) for p in pods.values())
    print(
        f"\n[admission] {label}: Workload created -> all {len(pods)} pods bound: "
        f"{last - created:.0f} s by the API server's clock (1 s resolution; created -> "
        f"QuotaReserved {stamps['QuotaReserved'] - created:.0f} s, -> Admitted "
        f"{stamps['Admitted'] - created:.0f} s), {wall:.2f} s wall clock from the Job's "
        "creation to the test seeing every pod bound; fabricfit's check retried "
        f"{max((c.get('retryCount') or 0) for c in workload['status']['admissionChecks'])} times"
    )


def check_active(custom: Any, name: str) -> bool:
    found = custom.get_cluster_custom_object(kueue.GROUP, kueue.VERSION, "admissionchecks", name)
    return any(
        c["type"] == "Active" and c["status"] == "True"
        for c in (found.get("status") or {}).get("conditions") or []
    )
