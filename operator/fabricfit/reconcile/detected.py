"""The ``TopologyDetected`` condition: does the label scheme find any fabric tier?

Without tier labels (or with the wrong ``labelScheme``) every node looks like its own island
in one flat fabric, and plans price as the best case (100% efficient) without a word. The
reconcile sets ``TopologyDetected`` from the cluster snapshot it already has: True
(``TiersFound``) naming the tiers, False (``NoTopologyLabels``, a Warning Event) when none, and
a plan made then reports its efficiency as unknown (:func:`flat_warning_of`). The detection
walks every node, so it is computed once per snapshot, not once per reconcile.
"""

from __future__ import annotations

from fabricfit.api.conditions import Reason
from fabricfit.fabric.detection import Detection, describe, detect_tiers, flat_warning
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.reconcile.derived import PerFacts
from fabricfit.reconcile.draft import StatusDraft

_last: list[tuple[ClusterSnapshot, str, Detection]] = []


def detection_of(snapshot: ClusterSnapshot, scheme: str) -> Detection:
    """``detect_tiers`` of ``snapshot``, reused while the same snapshot object is asked for."""
    if _last and _last[0][0] is snapshot and _last[0][1] == scheme:
        return _last[0][2]
    detection = detect_tiers(snapshot, scheme)
    _last[:] = [(snapshot, scheme, detection)]
    return detection


def set_topology_condition(
    draft: StatusDraft, snapshot: ClusterSnapshot, scheme: str, per_facts: PerFacts | None = None
) -> None:
    """The condition; with ``per_facts``, worded once while the nodes' facts hold (it names
    tiers and domains, never free GPUs)."""

    def word() -> tuple[Reason, str]:
        detection = detection_of(snapshot, scheme)
        reason = Reason.TIERS_FOUND if detection.found else Reason.NO_TOPOLOGY_LABELS
        return reason, describe(detection)

    said = per_facts.get(snapshot, ("detected", scheme), word) if per_facts else word()
    draft.condition(*said)


def flat_warning_of(snapshot: ClusterSnapshot, scheme: str, per_facts: PerFacts) -> str | None:
    """Why a plan on ``snapshot`` has no known efficiency (no tier found), once per facts."""
    return per_facts.get(
        snapshot, ("flat", scheme), lambda: flat_warning(detection_of(snapshot, scheme))
    )
