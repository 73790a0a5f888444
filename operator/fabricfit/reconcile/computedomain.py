"""The ComputeDomain step of a reconcile: multi-node NVLink for plans that span GB200 trays.

Theory of operation
-------------------
After the plan is settled and before the workload is released, :func:`settle_compute_domain`
asks the pure core whether any of the plan's groups spans trays of one NVLink domain
(:func:`fabricfit.placement.nvlink_span.nvlink_span`). If none does, nothing happens (and a
report left by an earlier plan is cleared). If one does, the job needs a ComputeDomain:

* the CRD is not served → ``ComputeDomain=False ComputeDomainUnavailable`` and placement goes
  on: the prediction prices those groups at NVLink speed, which NCCL will not get;
* else the ComputeDomain is created (owned by the TrainingTopology, so garbage collection
  deletes it with it) or read back. One of ours whose ``numNodes`` no longer matches the plan is
  replaced while no pod of the job is pinned or bound (its spec is immutable);
* the condition then says whether the pods can join its channel: the rank template must claim
  the channel template (``ChannelClaimMissing`` otherwise), and no node may carry two of the
  job's pods (``ChannelNodeShared``: the driver has one channel per node).

``status.computeDomain`` reports the name, ``numNodes``, the channel template, the state the
driver reports and whether the template claims the channel. :func:`release` deletes the
ComputeDomain on the finalizer path too, so it goes at once even where garbage collection lags.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricfit.api.conditions import Reason
from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.fabric.profiles import FabricProfile, ProfileError
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.kube import computedomains
from fabricfit.kube.rest import ApiError, Rest
from fabricfit.placement import build_layout
from fabricfit.placement.nvlink_span import NvlinkSpan, nvlink_span
from fabricfit.reconcile import evaluation, planning
from fabricfit.reconcile.context import Run, Target
from fabricfit.render.computedomain import (
    build_compute_domain,
    channel_template_name,
    claim_snippet,
    claims_channel,
    compute_domain_name,
    compute_domain_state,
    num_nodes_of,
)

#: What the prediction assumes when the job gets no ComputeDomain (said in the conditions).
FALLBACK = (
    "the predicted step time assumes NVLink between these trays; without a ComputeDomain NCCL "
    "falls back to the network between them and the step is slower than predicted"
)
_REFUSALS = frozenset({400, 403, 422})


def span_of(
    target: Target,
    plan: tuple[str, ...],
    snapshot: ClusterSnapshot,
    profile: FabricProfile | None = None,
) -> NvlinkSpan:
    """The plan's NVLink span (pure), on the snapshot's NVLink domains and the job's fabric
    (a TPU torus has no NVIDIA ComputeDomain: empty there)."""
    spec = target.spec
    layout = build_layout(spec.parallelism, spec.gpus_per_pod, spec.rank_order)
    planned = set(plan)
    domains = {n.name: n.place.nvlink_domain for n in snapshot.nodes if n.name in planned}
    return nvlink_span(plan, layout.groups, spec.gpus_per_pod, domains, profile=profile)


async def settle_compute_domain(
    run: Run, target: Target, plan: tuple[str, ...], snapshot: ClusterSnapshot, owner_uid: str
) -> None:
    """Create or check the plan's ComputeDomain and report it (see the module doc)."""
    draft = run.draft
    try:
        profile: FabricProfile | None = planning.resolve_profile(target, snapshot, run.state)[0]
    except ProfileError:  # the plan was made on it; a profile gone since is the plan's problem
        profile = None
    span = span_of(target, plan, snapshot, profile)
    if not span.needed or target.spec.placement.mode == "advisory":
        if draft.get("computeDomain") is not None:
            draft.set(computeDomain=None)
        return
    channel = channel_template_name(run.name)
    report: dict[str, Any] = {
        "name": compute_domain_name(run.name),
        "numNodes": len(span.nodes),
        "channelTemplate": channel,
        "claimed": claims_channel(target.template, channel),
        "groups": span.describe()[:256],
    }
    rest = run.state.rest
    if not await computedomains.served(rest):
        draft.set(computeDomain={**report, "state": "Unavailable"})
        draft.condition(
            Reason.COMPUTE_DOMAIN_UNAVAILABLE,
            f"{span.describe()} span trays of one NVLink domain, but the API server serves no "
            "ComputeDomain (resource.nvidia.com/v1beta1: install NVIDIA's DRA driver for GPUs); "
            f"{FALLBACK}",
        )
        return
    try:
        found = await _ensure(rest, run, target, report["numNodes"], owner_uid)
    except ApiError as err:
        if err.status not in _REFUSALS:
            raise
        draft.set(computeDomain={**report, "state": "Refused"})
        draft.condition(
            Reason.COMPUTE_DOMAIN_REFUSED,
            f"the API server refused ComputeDomain {report['name']} ({err.status} {err.reason}): "
            f"{err.message[:512]}; {FALLBACK}",
        )
        return
    report["numNodes"] = num_nodes_of(found) or report["numNodes"]
    draft.set(computeDomain={**report, "state": compute_domain_state(found)})
    _condition(run, span, report)


def _condition(run: Run, span: NvlinkSpan, report: Mapping[str, Any]) -> None:
    name, channel = report["name"], report["channelTemplate"]
    if not report["claimed"]:
        run.draft.condition(
            Reason.CHANNEL_CLAIM_MISSING,
            f"ComputeDomain {name} is ready for the job, but its pod template does not claim "
            f"the channel; add {claim_snippet(channel)} (Kubernetes does not let fabricfit add "
            f"it to a created workload); {FALLBACK}",
        )
    elif span.shared_nodes:
        run.draft.condition(
            Reason.CHANNEL_NODE_SHARED,
            f"nodes {', '.join(span.shared_nodes[:8])} carry two or more pods of the job, but the "
            "driver gives each node one channel for one pod: use one pod per tray "
            "(gpusPerPod = the tray's GPUs)",
        )
    else:
        run.draft.condition(
            Reason.COMPUTE_DOMAIN_CREATED,
            f"ComputeDomain {name} spans the job's {report['numNodes']} nodes for "
            f"{span.describe()}; the pods claim its channel {channel}",
        )


async def _ensure(
    rest: Rest, run: Run, target: Target, num_nodes: int, owner_uid: str
) -> dict[str, Any]:
    namespace, topology = run.key
    wanted = build_compute_domain(
        topology=topology, namespace=namespace, owner_uid=owner_uid, num_nodes=num_nodes
    )
    found = await computedomains.read(rest, namespace, compute_domain_name(topology))
    if found is not None and _replaceable(found, target, topology, num_nodes):
        await computedomains.delete(rest, namespace, compute_domain_name(topology))
        found = None
    if found is None:
        found = await computedomains.create(rest, wanted)
    return found


def _replaceable(found: Mapping[str, Any], target: Target, topology: str, num_nodes: int) -> bool:
    """Ours, sized for another plan, and no pod of the job has started."""
    labels = (found.get("metadata") or {}).get("labels") or {}
    if labels.get(TOPOLOGY_LABEL) != topology or num_nodes_of(found) == num_nodes:
        return False
    return not any(evaluation.is_pinned_or_bound(p) for p in target.pods)


async def release(rest: Rest, namespace: str, topology: str) -> None:
    """On deletion: delete the TrainingTopology's ComputeDomain if it is ours."""
    name = compute_domain_name(topology)
    try:
        found = await computedomains.read(rest, namespace, name)
    except ApiError as err:
        if err.status == 403:
            return  # no RBAC on the driver's kind: nothing of ours can exist
        raise
    labels = ((found or {}).get("metadata") or {}).get("labels") or {}
    if found is not None and labels.get(TOPOLOGY_LABEL) == topology:
        await computedomains.delete(rest, namespace, name)
