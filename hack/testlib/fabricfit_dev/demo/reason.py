"""Why one placement's communication is slower than the other's, read off the two placements.

Theory of operation
-------------------
Both columns of the demo are priced by the same cost model, so where Kueue TAS's placement is
slower, some communicator group of it leaves a faster tier that fabricfit's keeps it in. Per
parallelism dimension that costs Kueue's placement more (by the two placements' own
per-dimension prices), the groups of that dimension are located on the snapshot, tier by tier
from the innermost (NVLink domain, rail group, spine), and the first tier where more of Kueue's
groups cross than fabricfit's names the reason: nothing here is a canned sentence, a count that
does not differ is never claimed. A dimension that is slower although the same number of groups
cross every tier is said to be so (the difference is then in rails or shared links, which the
cost model prices but these counts do not show).

Whether the GPUs priced are the GPUs that run is said too: a pod that takes every GPU of its
node gets exactly those whatever hands devices out; a smaller pod's GPUs are the device plugin's
choice, and both columns price what it hands out (a node's lowest free windows in the worse
admission order, as ``baseline.decision_for`` prices them), which nothing enforces. Pure:
decisions and a snapshot in, lines out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot
from fabricfit.placement import PlacementDecision
from fabricfit.placement.layout import GROUP_KINDS
from fabricfit.render.summary import format_seconds

#: Tiers a group's traffic can leave, innermost first: (GpuSlot field, name). A group across two
#: NVLink domains talks over the network; across rail groups, through the spine.
TIERS = (("nvlink_domain", "NVLink domain"), ("rail_group", "rail group"), ("spine", "spine"))
#: A dimension slower by less than this share is not a reason.
SLOWER = 0.005
#: Dimensions explained, the costliest first (the demo prints one or two lines).
MAX_REASONS = 2


@dataclass(frozen=True)
class Crossing:
    """How many groups of one dimension span more than one domain of one tier, and the most
    domains one of them spans."""

    groups: int
    crossing: int
    widest: int


def located(decision: PlacementDecision, snapshot: ClusterSnapshot) -> list[GpuSlot]:
    """The GPU of every rank, by rank."""
    ordered = sorted(decision.assignments, key=lambda a: a.rank)
    return [snapshot.slot(a.node, a.gpu) for a in ordered]


def crossing(groups: Sequence[Sequence[int]], ranks: Sequence[GpuSlot], tier: str) -> Crossing:
    """Groups spanning several domains of ``tier`` (a node without the tier is its own)."""
    spans = [len({getattr(ranks[r], tier) or ranks[r].node for r in group}) for group in groups]
    wide = [span for span in spans if span > 1]
    return Crossing(len(spans), len(wide), max(wide, default=1))


def reason_lines(
    mine: PlacementDecision, theirs: PlacementDecision, snapshot: ClusterSnapshot, peer: str
) -> list[str]:
    """One line per dimension that costs ``theirs`` more (at most ``MAX_REASONS``, costliest
    first), saying which tier more of its groups cross under ``theirs`` than under ``mine``."""
    if mine.predicted is None or theirs.predicted is None:
        return []
    ours, other = mine.predicted.by_dimension, theirs.predicted.by_dimension
    slower = [
        kind
        for kind in GROUP_KINDS
        if other.get(kind, 0.0) > ours.get(kind, 0.0) * (1 + SLOWER) and other.get(kind, 0.0)
    ]
    slower.sort(key=lambda kind: ours.get(kind, 0.0) - other.get(kind, 0.0))
    ranks = located(mine, snapshot), located(theirs, snapshot)
    lines = []
    for kind in slower[:MAX_REASONS]:
        groups = mine.groups.get(kind, ())
        times = f"{kind} {format_seconds(other[kind])} vs {format_seconds(ours[kind])} a step"
        lines.append(_why(kind, groups, ranks, peer, times))
    return lines


def _why(
    kind: str,
    groups: Sequence[Sequence[int]],
    ranks: tuple[Sequence[GpuSlot], Sequence[GpuSlot]],
    peer: str,
    times: str,
) -> str:
    for tier, name in TIERS:
        ours, theirs = (crossing(groups, located, tier) for located in ranks)
        if theirs.crossing <= ours.crossing:
            continue
        verb = "spans" if theirs.crossing == 1 else "span"
        widest = f"{theirs.widest}" if theirs.widest == 2 else f"up to {theirs.widest}"
        mine = "none" if ours.crossing == 0 else f"{ours.crossing}"
        return (
            f"why: {theirs.crossing} of {peer}'s {theirs.groups} {kind} groups {verb} {widest} "
            f"{name}s, {mine} of fabricfit's: {times}"
        )
    return f"why: {times}, with as many {kind} groups across each tier (rails, shared links)"


def devices_line(decision: PlacementDecision, snapshot: ClusterSnapshot, gpus_per_pod: int) -> str:
    """Whether every pod takes all GPUs of its node (so the GPUs priced are the ones it gets)."""
    sizes = sorted({snapshot.node(node).gpus for node in decision.pods})
    if sizes == [gpus_per_pod]:
        return (
            f"GPUs: every pod takes all {gpus_per_pod} GPUs of its node, so the GPUs priced are "
            "the GPUs it runs on, whatever hands them out"
        )
    nodes = "/".join(str(size) for size in sizes)
    return (
        f"GPUs: {gpus_per_pod}-GPU pods on {nodes}-GPU nodes: which GPUs each gets is the "
        "device plugin's choice; both columns price what it hands out (not enforced)"
    )
