"""Text summary of a placement decision: what ``fabricfit plan`` prints for humans.

Theory of operation
-------------------
An engineer reading a plan wants, in this order: did it place, how good is it (predicted step
communication vs the lower bound, per dimension; planned next to running jobs, its
communication alone and with their traffic, and what it adds to theirs), where each pod went
grouped by spine and rail group, and why any preference was not met. ``build_summary``
returns that as a list of lines (pure, no I/O); ``render_summary`` joins them. Durations use
the unit that keeps three significant digits readable (s, ms, µs).
"""

from __future__ import annotations

from collections.abc import Sequence

from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.decision import PlacementDecision, ServingTimes, StepTimes
from fabricfit.placement.layout import GROUP_KINDS
from fabricfit.placement.spares import SpareSet

INDENT = "  "


def format_seconds(seconds: float) -> str:
    """``0.0123`` → ``12.3 ms``."""
    if seconds == 0:
        return "0"
    if seconds >= 1.0:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _ranges(values: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` → ``0-2,5``."""
    parts: list[str] = []
    start = prev = None
    for v in sorted(values):
        if start is None:
            start = prev = v
        elif prev is not None and v == prev + 1:
            prev = v
        else:
            parts.append(f"{start}-{prev}" if start != prev else f"{start}")
            start = prev = v
    if start is not None:
        parts.append(f"{start}-{prev}" if start != prev else f"{start}")
    return ",".join(parts)


def _job_line(decision: PlacementDecision) -> str:
    sizes = {k: max((len(g) for g in decision.groups.get(k, ())), default=1) for k in GROUP_KINDS}
    dims = " · ".join(f"{k} {sizes[k]}" for k in GROUP_KINDS)
    world = sum(len(g) for g in decision.groups.get("tensor", ()))
    return f"job: {world} GPUs ({dims}); fabric {decision.fabric or 'default'}"


def _times_table(predicted: StepTimes, lower: StepTimes | None) -> list[str]:
    lines = [f"{INDENT}{'dimension':<10} {'predicted':>12} {'lower bound':>12}"]
    for kind in (*GROUP_KINDS, "step"):
        if kind == "step":
            p, lb = predicted.step_comm_seconds, lower.step_comm_seconds if lower else 0.0
        else:
            p = predicted.by_dimension.get(kind, 0.0)
            lb = lower.by_dimension.get(kind, 0.0) if lower else 0.0
        lines.append(f"{INDENT}{kind:<10} {format_seconds(p):>12} {format_seconds(lb):>12}")
    return lines


def _pod_lines(decision: PlacementDecision, snapshot: ClusterSnapshot | None) -> list[str]:
    per_pod: dict[int, list[int]] = {}
    gpus: dict[int, list[int]] = {}
    for a in decision.assignments:
        per_pod.setdefault(a.pod, []).append(a.rank)
        gpus.setdefault(a.pod, []).append(a.gpu)
    stage_of = {r: i for chain in decision.groups.get("pipeline", ()) for i, r in enumerate(chain)}
    lines: list[str] = []
    last_place = ""
    for pod, node in enumerate(decision.pods):
        place = _place_label(snapshot, node)
        if place != last_place:
            lines.append(f"{INDENT}{place}")
            last_place = place
        ranks = per_pod.get(pod, [])
        stages = sorted({stage_of.get(r, 0) for r in ranks})
        lines.append(
            f"{INDENT * 2}pod {pod:<4} {node:<20} GPUs {_ranges(gpus.get(pod, [])):<8} "
            f"ranks {_ranges(ranks):<12} stage {_ranges(stages)}"
        )
    return lines


def _place_label(snapshot: ClusterSnapshot | None, node: str) -> str:
    if snapshot is None or not snapshot.has_node(node):
        return "(unknown place)"
    place = snapshot.node(node).place
    spine = place.spine or "(single spine)"
    rail_group = place.rail_group or "(no rail group)"
    return f"spine {spine} / rail group {rail_group}"


def serving_line(times: ServingTimes) -> str:
    """``serving: per output token 4.54 ms; prefill 27.8 ms; KV transfer —``."""
    phases = (
        ("per output token (decode step)", times.decode_token_comm_seconds),
        ("prefill", times.prefill_comm_seconds),
        ("KV transfer", times.kv_transfer_seconds),
    )
    shown = [f"{name} {format_seconds(v)}" for name, v in phases if v is not None]
    return "serving communication: " + "; ".join(shown)


def neighbours_line(predicted: StepTimes) -> str | None:
    """``communication alone 1.2 s; with neighbours 1.3 s (+100 ms on links shared with running
    jobs); adds 20 ms per step to them in total``; None when not priced next to running jobs."""
    slowdown = predicted.neighbour_slowdown_seconds
    if slowdown is None:
        return None
    added = predicted.slowdown_added_to_others_seconds or 0.0
    return (
        f"communication alone {format_seconds(predicted.alone_step_comm_seconds)}; with "
        f"neighbours {format_seconds(predicted.step_comm_seconds)} "
        f"(+{format_seconds(slowdown)} on links shared with running jobs); adds "
        f"{format_seconds(added)} per step to them in total"
    )


MAX_SPARES_LISTED = 12


def spares_line(spares: SpareSet) -> str | None:
    """``spares: 2 per NVLink domain (fabric gb200-nvl72), 4 nodes kept free: a, b, c, d``;
    None when the plan keeps no spares."""
    if spares.per_domain <= 0:
        return None
    nodes = spares.nodes
    shown = ", ".join(nodes[:MAX_SPARES_LISTED])
    more = f" and {len(nodes) - MAX_SPARES_LISTED} more" if len(nodes) > MAX_SPARES_LISTED else ""
    return (
        f"spares: {spares.per_domain} per NVLink domain ({spares.source}), "
        f"{len(nodes)} nodes kept free" + (f": {shown}{more}" if nodes else "")
    )


def cross_rail_line(decision: PlacementDecision) -> str:
    """Which groups' traffic between nodes changes rails (climbs above the leaf switch)."""
    crossing = [
        f"{dim} {n} of {len(decision.groups.get(dim, ()))}"
        for dim, n in decision.cross_rail.items()
        if n
    ]
    if not crossing:
        return "rails: no group's traffic between nodes changes rails"
    return f"rails: groups whose traffic between nodes changes rails: {', '.join(crossing)}"


def build_summary(
    decision: PlacementDecision,
    snapshot: ClusterSnapshot | None = None,
    flat: str | None = None,
) -> list[str]:
    """The summary as lines (see module docstring); ``flat`` is the warning of a plan made
    where no topology tier was found (``fabric.detection.flat_warning``): its efficiency is
    then unknown."""
    lines = [f"fabricfit plan: {'PLACED' if decision.feasible else 'INFEASIBLE'}"]
    if flat is not None:
        lines.append(f"warning: {flat}")
    if decision.groups:
        lines.append(_job_line(decision))
    if decision.feasible and decision.predicted is not None:
        lower = decision.lower_bound
        what = "step communication" if decision.predicted.serving is None else "to first token"
        efficiency = "unknown (no topology tier)" if flat else f"{decision.efficiency:.1%}"
        lines.append(
            f"predicted {what} {format_seconds(decision.predicted.step_comm_seconds)}"
            f"; lower bound {format_seconds(lower.step_comm_seconds if lower else 0.0)}"
            f"; efficiency {efficiency}"
        )
        lines.extend(f"warning: {w}" for w in decision.warnings)
        neighbours = neighbours_line(decision.predicted)
        if neighbours is not None:
            lines.append(neighbours)
        lines.extend(_times_table(decision.predicted, lower))
        if decision.predicted.serving is not None:
            lines.append(serving_line(decision.predicted.serving))
        lines.append(cross_rail_line(decision))
        lines.append(f"candidate: {decision.candidate}")
        lines.append("pods:")
        lines.extend(_pod_lines(decision, snapshot))
    spares = spares_line(decision.spares)
    if spares is not None:
        lines.append(spares)
    if decision.reasons:
        lines.append("reasons:" if not decision.feasible else "unmet preferences:")
        lines.extend(f"{INDENT}- {r}" for r in decision.reasons)
    if decision.largest_feasible is not None:
        fit = decision.largest_feasible
        lines.append(
            f"largest job of this shape that fits now: {fit.world_size} GPUs "
            f"({fit.pods} pods, data parallelism {fit.data})"
        )
    if decision.scores:
        scores = " · ".join(f"{k} {v:.1f}" for k, v in decision.scores.items())
        lines.append(f"plugin scores: {scores}")
    return lines


def render_summary(
    decision: PlacementDecision, snapshot: ClusterSnapshot | None = None, flat: str | None = None
) -> str:
    return "\n".join(build_summary(decision, snapshot, flat)) + "\n"
