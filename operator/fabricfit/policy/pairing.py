"""The two TrainingTopologies of a disaggregated deployment: who is whose partner, and the
partner's recorded plan as the planner reads it (pure; shared by ``fabricfit plan --paired``
and the operator).

Theory of operation
-------------------
A prefill and a decode TrainingTopology of one namespace name each other with
``serving.pairedWith``. The one planned second reads the first's status — its plan (the node of
each pod) and the GPUs per pod it settled — and its spec (parallelism, rank order, role), and
prices the KV-cache transfer between them (:mod:`fabricfit.placement.pairing`). The first one
planned had no partner to read, so it reports no KV transfer; neither is planned again for the
other's sake (a running deployment is never moved to suit its partner).

:func:`pairing_problems` is what no cluster state can fix (a spec naming itself);
:func:`partner_of` turns the partner's object into a :class:`Partner`, or says in one sentence
why it cannot be one (not a serving spec, the same role, no plan yet).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.api.serving import PARTNER_ROLE
from fabricfit.placement.pairing import Partner
from fabricfit.policy.spec import parse_spec
from fabricfit.render.record import read_plan


def pairing_problems(name: str, spec: TrainingTopologySpec) -> tuple[str, ...]:
    """Problems of ``spec.serving.pairedWith`` the spec alone shows (``name``: the spec's own
    TrainingTopology name; empty when unknown, offline)."""
    serving = spec.serving
    if serving is None or serving.paired_with is None or not name:
        return ()
    if serving.paired_with == name:
        return (f"serving.pairedWith names this TrainingTopology ({name}) itself",)
    return ()


def partner_of(
    name: str,
    raw_spec: object,
    status: Mapping[str, Any] | None,
    *,
    role: str,
) -> Partner | str:
    """The partner ``name`` (its spec and status as read) of a job whose role is ``role``, or
    why it cannot be one; ``status`` None or without a complete plan: not planned yet."""
    spec, problems = parse_spec(raw_spec, require_workload=False)
    if spec is None or problems:
        return f"the paired TrainingTopology {name} has an invalid spec"
    wanted = PARTNER_ROLE.get(role)
    serving = spec.serving
    if wanted is None or serving is None or serving.role != wanted:
        found = serving.role if serving is not None else "training"
        return f"the paired TrainingTopology {name} is {found}, not the {wanted} side"
    record = read_plan(status)
    if not record.pods:
        return f"the paired TrainingTopology {name} has no plan yet"
    settled = (status or {}).get("gpusPerPod")
    gpus_per_pod = settled if isinstance(settled, int) and settled > 0 else spec.gpus_per_pod
    return Partner(
        name=name,
        parallelism=spec.parallelism,
        gpus_per_pod=gpus_per_pod,
        rank_order=spec.rank_order,
        pods=record.pods,
    )
