"""Every condition type and reason the operator writes, with the Event each one raises.

Theory of operation
-------------------
A reason belongs to exactly one condition type and one status (``InsufficientGPUs`` only ever
means ``Planned=False``), so a reason names the whole condition change: reconcile code says
``draft.condition(Reason.INSUFFICIENT_GPUS, message)`` and never spells a type or status. The
reason also carries the severity of the Event posted when the condition changes (Warning: a
human should look) and whether it means "fix the spec" (summary ``Invalid``) rather than "wait"
(summary ``Waiting``). Adding a reason is one line here; nothing else lists them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

ConditionStatus = Literal["True", "False", "Unknown"]


class ConditionType(StrEnum):
    """The condition types of a TrainingTopology's status (``metav1.Condition.type``)."""

    PLANNED = "Planned"
    PLACED = "Placed"
    DEGRADED = "Degraded"
    TOPOLOGY_DETECTED = "TopologyDetected"
    # Multi-node NVLink (GB200 NVL72): the job's ComputeDomain and its pods' channel claim.
    COMPUTE_DOMAIN = "ComputeDomain"
    # Serving with latency targets: whether the plan's communication alone exceeds one.
    LATENCY_TARGET = "LatencyTarget"


class Severity(StrEnum):
    """The type of the Kubernetes Event posted when a condition changes."""

    NORMAL = "Normal"
    WARNING = "Warning"


_WARN = Severity.WARNING
_NORMAL = Severity.NORMAL
_PLANNED = ConditionType.PLANNED
_PLACED = ConditionType.PLACED
_DEGRADED = ConditionType.DEGRADED
_TOPOLOGY = ConditionType.TOPOLOGY_DETECTED
_DOMAIN = ConditionType.COMPUTE_DOMAIN
_LATENCY = ConditionType.LATENCY_TARGET


class Reason(StrEnum):
    """A condition reason: its value, the condition it sets, the status, the Event severity,
    and whether it means the spec must change (``invalid``)."""

    condition: ConditionType
    status: ConditionStatus
    severity: Severity
    invalid: bool

    def __new__(
        cls,
        value: str,
        condition: ConditionType,
        status: ConditionStatus,
        severity: Severity,
        invalid: bool = False,
    ) -> Reason:
        member = str.__new__(cls, value)
        member._value_ = value
        member.condition = condition
        member.status = status
        member.severity = severity
        member.invalid = invalid
        return member

    # Planned
    PLANNED = ("Planned", _PLANNED, "True", _NORMAL)
    INVALID_SPEC = ("InvalidSpec", _PLANNED, "False", _WARN, True)
    INVALID_FABRIC = ("InvalidFabric", _PLANNED, "False", _WARN, True)
    UNSUPPORTED_WORKLOAD = ("UnsupportedWorkload", _PLANNED, "False", _WARN, True)
    INSUFFICIENT_GPUS = ("InsufficientGPUs", _PLANNED, "False", _WARN)
    # queuePolicy wait-if-faster: a placement that frees up soon saves more than the wait
    # costs; not planned yet, nothing reserved, the AdmissionCheck answers Retry (summary
    # Pending): the job is re-checked at Kueue's next requeue.
    WAITING_FOR_BETTER_PLACEMENT = ("WaitingForBetterPlacement", _PLANNED, "Unknown", _NORMAL)
    # admission-check mode: not planned yet (summary Pending), so no reservation, before Kueue
    # reserved quota, and none after Kueue evicted or preempted the Workload.
    AWAITING_ADMISSION = ("AwaitingAdmission", _PLANNED, "Unknown", _NORMAL)
    ADMISSION_RELEASED = ("AdmissionReleased", _PLANNED, "Unknown", _NORMAL)
    # Placed
    ALL_PODS_BOUND = ("AllPodsBound", _PLACED, "True", _NORMAL)
    ADVISORY = ("Advisory", _PLACED, "False", _NORMAL)
    WORKLOAD_NOT_FOUND = ("WorkloadNotFound", _PLACED, "False", _NORMAL)
    WORKLOAD_NOT_SUSPENDED = ("WorkloadNotSuspended", _PLACED, "False", _WARN)
    # The API server (validation or an admission webhook) refused the template patch.
    WORKLOAD_PATCH_REJECTED = ("WorkloadPatchRejected", _PLACED, "False", _WARN)
    # kueue-tas mode: a workload whose Kueue Workloads are built only at creation (a queued
    # LeaderWorkerSet) lacks the annotations fabricfit chose; it must be created with them.
    KUEUE_ANNOTATIONS_MISSING = ("KueueAnnotationsMissing", _PLACED, "False", _WARN)
    WAITING_FOR_PODS = ("WaitingForPods", _PLACED, "False", _NORMAL)
    # admission-check mode: Kueue has not admitted the Workload (or evicted it)
    NOT_ADMITTED = ("NotAdmitted", _PLACED, "False", _NORMAL)
    PODS_OFF_PLAN = ("PodsOffPlan", _PLACED, "False", _WARN)
    # Pinned pods kube-scheduler calls Unschedulable: something fabricfit does not place took
    # their node's GPUs (or the node); re-placed and recreated, or waiting where none fits.
    PODS_UNSCHEDULABLE = ("PodsUnschedulable", _PLACED, "False", _WARN)
    # The workload finished (Job Complete or Failed, ...): its plan, reservation and traffic
    # are released and it is never planned again (summary Finished).
    WORKLOAD_FINISHED = ("WorkloadFinished", _PLACED, "False", _NORMAL)
    # Degraded
    NODES_HEALTHY = ("NodesHealthy", _DEGRADED, "False", _NORMAL)
    NODE_UNAVAILABLE = ("NodeUnavailable", _DEGRADED, "True", _WARN)
    NO_HEALTHY_NODE = ("NoHealthyNode", _DEGRADED, "True", _WARN)
    # Ranks re-placed off a node in maintenance (cordoned or tainted), still waiting to move.
    NODE_MAINTENANCE = ("NodeMaintenance", _DEGRADED, "True", _WARN)
    # TopologyDetected: whether the label scheme finds any fabric tier (else plans are flat)
    TIERS_FOUND = ("TiersFound", _TOPOLOGY, "True", _NORMAL)
    NO_TOPOLOGY_LABELS = ("NoTopologyLabels", _TOPOLOGY, "False", _WARN)
    # ComputeDomain: set only for plans whose groups span trays of one NVLink domain
    COMPUTE_DOMAIN_CREATED = ("ComputeDomainCreated", _DOMAIN, "True", _NORMAL)
    COMPUTE_DOMAIN_UNAVAILABLE = ("ComputeDomainUnavailable", _DOMAIN, "False", _WARN)
    COMPUTE_DOMAIN_REFUSED = ("ComputeDomainRefused", _DOMAIN, "False", _WARN)
    CHANNEL_CLAIM_MISSING = ("ChannelClaimMissing", _DOMAIN, "False", _WARN)
    CHANNEL_NODE_SHARED = ("ChannelNodeShared", _DOMAIN, "False", _WARN)
    # LatencyTarget: set only for serving specs with targets the role's phases meet or exceed
    COMMUNICATION_WITHIN_TARGET = ("CommunicationWithinTarget", _LATENCY, "True", _NORMAL)
    COMMUNICATION_EXCEEDS_TARGET = ("CommunicationExceedsTarget", _LATENCY, "False", _WARN)


#: Reasons of ``Planned=False`` that mean "fix the spec" (summary Invalid); any other reason
#: means the plan may still succeed later (summary Waiting), e.g. ``InsufficientGPUs``.
INVALID_REASONS = frozenset(r for r in Reason if r.invalid)
