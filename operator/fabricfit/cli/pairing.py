"""``fabricfit plan --paired TT.yaml``: plan one side of a disaggregated deployment next to the
other (the operator's rule, offline).

Theory of operation
-------------------
The file holds the partner's TrainingTopology (``kubectl get tt NAME -o yaml``). When its
status records a plan, that plan is the partner's (as the operator would read it), and the GPUs
its reservation holds beyond its pods in ``--pods`` are taken out first. When it has none, the
partner is planned here first, on the same snapshot and fabric, and this job is planned around
it: the what-if of the whole deployment, the partner first. Either way the KV-cache transfer is
priced against the partner's pods (:mod:`fabricfit.policy.pairing`). Every mismatch is one line
on stderr and exit 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.cli.common import UsageError
from fabricfit.cli.inputs import read_objects, shown
from fabricfit.fabric.objects import str_at
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.pairing import Partner
from fabricfit.placement.search import plan_placement
from fabricfit.policy import admit
from fabricfit.policy.pairing import partner_of
from fabricfit.reconcile.inventory import holds_of_others
from fabricfit.render.record import read_plan
from fabricfit.render.status import reservation_of


@dataclass(frozen=True)
class Paired:
    """The partner, the GPUs it holds that the snapshot does not show, and whether it was
    planned here."""

    partner: Partner
    reservations: Mapping[str, int]
    planned_here: bool

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "name": self.partner.name,
            "planned_here": self.planned_here,
            "pods": [{"index": i, "node": n} for i, n in enumerate(self.partner.pods)],
        }


def add_pairing_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--paired",
        metavar="TT.yaml",
        help="the other side (prefill or decode) of a disaggregated deployment: a "
        "TrainingTopology with its status (its plan), or without one (planned here first)",
    )


def read_paired(
    path: str,
    spec: TrainingTopologySpec,
    snapshot: ClusterSnapshot,
    profile: FabricProfile,
    pods: Sequence[Mapping[str, Any]],
) -> Paired:
    """The partner in ``path`` for ``spec`` (see the module doc)."""
    serving = spec.serving
    if serving is None or serving.role == "replica":
        raise UsageError("--paired needs a spec whose serving.role is prefill or decode")
    body = _one_topology(read_objects(path, "paired topology"), path)
    name = str_at(body, "metadata", "name") or ""
    if serving.paired_with not in (None, name):
        raise UsageError(
            f"--paired {shown(path)} is TrainingTopology {name or '(unnamed)'}, but "
            f"serving.pairedWith names {serving.paired_with}"
        )
    status = body.get("status") if isinstance(body.get("status"), dict) else None
    found = partner_of(name, body.get("spec"), status, role=serving.role)
    if isinstance(found, Partner):
        recorded = read_plan(status).reservation
        held = holds_of_others(("", ""), {("", name): recorded}, _as_partner_pods(pods))
        return Paired(found, held, planned_here=False)
    if not found.endswith("has no plan yet"):
        raise UsageError(f"--paired {shown(path)}: {found}")
    return _plan_partner(path, name, body, role=serving.role, snapshot=snapshot, profile=profile)


def _plan_partner(
    path: str,
    name: str,
    body: Mapping[str, Any],
    *,
    role: str,
    snapshot: ClusterSnapshot,
    profile: FabricProfile,
) -> Paired:
    """Plan the partner first (it has no plan of its own)."""
    admission = admit(body.get("spec"), None, require_workload=False)
    if admission.spec is None or admission.request is None:
        raise UsageError(f"--paired {shown(path)}: {admission.message}")
    decision = plan_placement(snapshot, admission.request, profile)
    if not decision.feasible:
        why = "; ".join(decision.reasons) or "not enough free GPUs"
        raise UsageError(f"--paired {shown(path)}: {name} does not fit: {why}")
    partner_spec = admission.spec
    gpus: dict[int, list[int]] = {}
    for a in sorted(decision.assignments, key=lambda a: (a.pod, a.local)):
        gpus.setdefault(a.pod, []).append(a.gpu)
    partner = partner_of(name, body.get("spec"), _status_of(decision.pods), role=role)
    if not isinstance(partner, Partner):
        raise UsageError(f"--paired {shown(path)}: {partner}")
    located = Partner(
        name=name,
        parallelism=partner.parallelism,
        gpus_per_pod=partner_spec.gpus_per_pod,
        rank_order=partner.rank_order,
        pods=decision.pods,
        gpus=tuple(tuple(gpus[k]) for k in range(len(decision.pods))),
    )
    return Paired(located, reservation_of(decision, partner_spec.gpus_per_pod), True)


def _status_of(pods: Sequence[str]) -> dict[str, Any]:
    return {"pods": [{"index": i, "node": n} for i, n in enumerate(pods)]}


def _one_topology(objects: list[dict[str, Any]], path: str) -> dict[str, Any]:
    found = [o for o in objects if o.get("kind") == "TrainingTopology"]
    if len(found) != 1 or not isinstance(found[0].get("spec"), dict):
        raise UsageError(
            f"paired topology file {shown(path)}: expected one TrainingTopology with a spec, "
            f"found {len(found)}"
        )
    return found[0]


def _as_partner_pods(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods dump, with namespaces blanked so the partner's labelled pods match its key."""
    return [{**p, "metadata": {**(p.get("metadata") or {}), "namespace": ""}} for p in pods]
