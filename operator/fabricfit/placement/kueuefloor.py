"""The Kueue floor: a plan never predicts more communication than Kueue TAS would (pure).

The search adds Kueue TAS BestFit's placements as candidates (:func:`peer_candidates`: the job
preferred at each topology level, the one at the rail group labelled :data:`PEER_LABEL`), and
its choice is held to the cheapest of them (:func:`no_worse_than_peer`). "Never worse than the
Kueue emulation" therefore holds by construction; the tests that can fail compare the search
with the emulation priced on its own and with the exact optimum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fabricfit.placement.candidates import PlanCandidate
from fabricfit.placement.peers import kueue_bestfit
from fabricfit.placement.peers.kueue_bestfit import LEVELS as PEER_LEVELS
from fabricfit.placement.scoring import Scored
from fabricfit.placement.slots import LeafDomain

PEER_LABEL = "kueue-bestfit (the peer's placement)"  # preferred rail group, Kueue's usual
PEER_PREFIX = "kueue-bestfit ("  # every Kueue candidate's label starts so
PEER_TOLERANCE = 1e-9  # relative: float noise between equal placements is not "worse"


def peer_candidates(domains: Sequence[LeafDomain], pods: int) -> list[PlanCandidate]:
    """Kueue TAS BestFit's placement with the job preferred at each topology level (distinct
    ones only; preferred rail group keeps ``PEER_LABEL``)."""
    out: list[PlanCandidate] = []
    seen: set[tuple[object, ...]] = set()
    for level in ("rail-group", *(lv for lv in PEER_LEVELS if lv != "rail-group")):
        slots = kueue_bestfit(domains, pods, level=level)
        if slots is None or slots in seen:
            continue
        seen.add(slots)
        label = PEER_LABEL if level == "rail-group" else f"{PEER_PREFIX}preferred {level})"
        out.append(PlanCandidate(label=label, slots=slots))
    return out


def peer_limit(scored: Sequence[Scored]) -> float:
    """The step communication of the cheapest Kueue candidate (with float noise), or infinity."""
    peers = [s.predicted_seconds for s in scored if s.label.startswith(PEER_PREFIX)]
    return min(peers) * (1.0 + PEER_TOLERANCE) if peers else math.inf


def no_worse_than_peer(best: Scored, scored: Sequence[Scored]) -> Scored:
    """``best`` unless it predicts more communication than the cheapest Kueue candidate; then
    the best-scored candidate that does not (that peer itself at worst)."""
    limit = peer_limit(scored)
    if best.predicted_seconds <= limit:
        return best
    return min((s for s in scored if s.predicted_seconds <= limit), key=Scored.sort_key)
