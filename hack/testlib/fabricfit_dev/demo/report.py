"""What the demo prints per job, and the one SVG that shows every job's placement.

Pure: :class:`~demo.baseline.JobView` values in, lines and an SVG string out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any
from xml.sax.saxutils import escape

from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement import PlacementDecision
from fabricfit.placement.layout import GROUP_KINDS
from fabricfit.render.summary import format_seconds
from fabricfit.render.svg import build_svg
from fabricfit_dev.demo.baseline import PEER, JobView
from fabricfit_dev.demo.reason import devices_line, reason_lines
from fabricfit_dev.demo.workloads import DemoJob

INDENT = "  "
PANEL_GAP_PX = 16
HEADER_PX = 58
REPRICE_TOLERANCE = 0.01
TIE_TOLERANCE = 0.005  # within 0.5 %: a tie, said as one


def _short(place_id: str | None) -> str:
    """``spine-0/rg-1/rack-3`` → ``rack-3`` (ids are qualified by their parents)."""
    return place_id.rsplit("/", 1)[-1] if place_id else "-"


def rail_groups_used(decision: PlacementDecision, snapshot: ClusterSnapshot) -> str:
    counts = Counter(_short(snapshot.node(n).place.rail_group) for n in decision.pods)
    return ", ".join(f"{group} ×{count}" for group, count in sorted(counts.items()))


def job_lines(job: DemoJob, view: JobView) -> list[str]:
    planned, peer, snapshot = view.planned, view.peer, view.snapshot
    lines = [
        f"job {job.name}: {job.kind}, {job.shape}, {job.world_size} GPUs in {job.pods} pods "
        f"(fabric {planned.fabric})",
        f"{INDENT}{'pod':>5}    {'node':<18} {'spine':<10} {'rail group':<11} rack",
    ]
    for index, node in enumerate(planned.pods):
        place = snapshot.node(node).place
        lines.append(
            f"{INDENT}pod {index:>2} -> {node:<18} {_short(place.spine):<10} "
            f"{_short(place.rail_group):<11} {_short(place.rack)}"
        )
    lines.append(f"{INDENT}rail groups used: {rail_groups_used(planned, snapshot)}")
    if peer is not None:
        verb = "used" if view.peer_real else "would use"
        lines.append(f"{INDENT}{PEER} {verb}: {rail_groups_used(peer, snapshot)}")
    lines.extend(_times(planned, peer))
    if peer is not None and peer_is_slower(planned, peer):
        lines.extend(f"{INDENT}{line}" for line in reason_lines(planned, peer, snapshot, PEER))
    lines.append(f"{INDENT}{devices_line(planned, snapshot, job.gpus_per_pod)}")
    reported = planned.predicted.step_comm_seconds if planned.predicted else 0.0
    if abs(view.repriced.step_comm_seconds - reported) > REPRICE_TOLERANCE * reported:
        lines.append(
            f"{INDENT}(priced here on the bound nodes: "
            f"{format_seconds(view.repriced.step_comm_seconds)}; the operator's GPU windows "
            "inside shared nodes may differ)"
        )
    return lines


def peer_is_slower(planned: PlacementDecision, peer: PlacementDecision) -> bool:
    """Kueue TAS's step communication beyond the tie tolerance of fabricfit's."""
    if planned.predicted is None or peer.predicted is None:
        return False
    mine = planned.predicted.step_comm_seconds
    return peer.predicted.step_comm_seconds > mine * (1 + TIE_TOLERANCE)


def summary_lines(jobs: Sequence[DemoJob], views: Sequence[JobView]) -> list[str]:
    """One row per job: the headline numbers of the tables above."""
    lines = [
        f"{'job':<20} {'shape':<16} {'pods':>4} {'fabricfit':>10} {'lower bound':>12} "
        f"{PEER:>13} {'ratio':>6}"
    ]
    for job, view in zip(jobs, views, strict=True):
        mine = view.planned.predicted.step_comm_seconds if view.planned.predicted else 0.0
        lower = view.planned.lower_bound.step_comm_seconds if view.planned.lower_bound else 0.0
        peer, ratio = "n/a", ""
        if view.peer is not None and view.peer.predicted is not None and mine > 0:
            theirs = view.peer.predicted.step_comm_seconds
            peer, ratio = format_seconds(theirs), f"{theirs / mine:.2f}×"
        lines.append(
            f"{job.name:<20} {job.shape:<16} {job.pods:>4} {format_seconds(mine):>10} "
            f"{format_seconds(lower):>12} {peer:>13} {ratio:>6}"
        )
    return lines


def _times(planned: PlacementDecision, peer: PlacementDecision | None) -> list[str]:
    assert planned.predicted is not None
    mine, theirs = planned.predicted, peer.predicted if peer is not None else None
    lines = [f"{INDENT}step communication   {'fabricfit':>12} {PEER:>13}"]
    for kind in GROUP_KINDS:
        a = mine.by_dimension.get(kind, 0.0)
        b = theirs.by_dimension.get(kind, 0.0) if theirs is not None else 0.0
        if a or b:
            lines.append(f"{INDENT}  {kind:<18} {format_seconds(a):>12} {_fmt(b, theirs):>13}")
    total = theirs.step_comm_seconds if theirs is not None else 0.0
    lines.append(
        f"{INDENT}  {'total per step':<18} {format_seconds(mine.step_comm_seconds):>12} "
        f"{_fmt(total, theirs):>13}"
    )
    lower = planned.lower_bound.step_comm_seconds if planned.lower_bound is not None else 0.0
    if theirs is None or mine.step_comm_seconds <= 0:
        verdict = f"{PEER}: the free GPUs cannot hold the job"
    elif total <= mine.step_comm_seconds * (1 + TIE_TOLERANCE):
        ratio = total / mine.step_comm_seconds
        verdict = f"{PEER} ties ({ratio:.2f}×): no gain from fabricfit here"
    else:
        verdict = f"{PEER} is {total / mine.step_comm_seconds:.2f}× the communication time"
    lines.append(
        f"{INDENT}lower bound {format_seconds(lower)}; fabricfit reaches "
        f"{planned.efficiency:.1%} of it; {verdict}"
    )
    return lines


def _fmt(seconds: float, times: object) -> str:
    return format_seconds(seconds) if times is not None else "n/a"


def panel_title(job: DemoJob, view: JobView) -> str:
    assert view.planned.predicted is not None
    title = f"{job.name} · {job.shape} · {format_seconds(view.planned.predicted.step_comm_seconds)}"
    if view.peer is not None and view.peer.predicted is not None:
        title += f" ({PEER} {format_seconds(view.peer.predicted.step_comm_seconds)})"
    return title


def build_demo_svg(
    jobs: Sequence[DemoJob], views: Sequence[JobView], heading: str, detail: Sequence[str]
) -> str:
    """One SVG document: a heading, then each job's placement view (``build_svg``) stacked."""
    panels: list[str] = []
    y = float(HEADER_PX)
    width = 0.0
    for job, view in zip(jobs, views, strict=True):
        doc = build_svg(view.planned, view.snapshot, title=panel_title(job, view))
        size = re.search(r'width="([\d.]+)" height="([\d.]+)"', doc)
        assert size is not None
        panels.append(doc.replace("<svg ", f'<svg x="0" y="{y:.0f}" ', 1))
        width = max(width, float(size.group(1)))
        y += float(size.group(2)) + PANEL_GAP_PX
    names = ", ".join(job.name for job in jobs)
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{y:.0f}" '
            f'viewBox="0 0 {width:.0f} {y:.0f}">',
            f"<title>{escape(f'fabricfit demo: {names}')}</title>",
            f'<text x="10" y="20" style="font:bold 16px Helvetica,Arial,sans-serif">'
            f"{escape(heading)}</text>",
            *(
                f'<text x="10" y="{36 + 14 * i}" style="font:11px Helvetica,Arial,sans-serif">'
                f"{escape(line)}</text>"
                for i, line in enumerate(detail)
            ),
            *panels,
            "</svg>",
            "",
        ]
    )


def compute_domain_lines(status: Mapping[str, Any]) -> list[str]:
    """What the operator says about the job's ComputeDomain (multi-node NVLink), if it needs one."""
    report = status.get("computeDomain")
    if not isinstance(report, Mapping):
        return []
    condition: Mapping[str, Any] = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "ComputeDomain"), {}
    )
    lines = [
        f"{INDENT}ComputeDomain {report.get('name')}: {report.get('groups')} span trays of one "
        f"NVLink domain; numNodes {report.get('numNodes')}, channel template "
        f"{report.get('channelTemplate')}, state {report.get('state')}",
    ]
    if condition:
        lines.append(f"{INDENT}  condition ComputeDomain={condition.get('status')} "
                     f"{condition.get('reason')}: {condition.get('message')}")  # fmt: skip
    return lines
