"""SVG picture of a placement: spines ⊃ rail groups ⊃ racks ⊃ nodes ⊃ GPUs.

Theory of operation
-------------------
The picture is the one an engineer would put on a wiki page. Each spine is a band; its rail
groups are columns; each column stacks its racks and each rack its nodes, one row of GPU squares
per node. Nodes that share an NVLink domain (the trays of a GB200 NVL72 rack) are boxed by that
domain instead, in blue: the picture shows which groups stay inside a rack.
A GPU carrying a rank is filled with the colour of its tensor-parallel group and
labelled with its pipeline stage; free GPUs are white with a dashed outline; GPUs held by other
pods are grey (other plans' reservations hatched). Every data-parallel group is drawn as a ring
through its GPUs in the rail's colour, so a rail-aligned DP group is a straight vertical line in
one column and a misplaced one visibly jumps columns or GPU positions.

Geometry is computed first (``_Layout``: node name → row origin), then elements are emitted as
strings with every text escaped, so the output is always well-formed XML. Large clusters are
cut to the leaf domains the plan touches (all of them for ≤ 64 nodes); a caption says how many
nodes were left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo
from fabricfit.placement.constraints import NO_RESERVATIONS
from fabricfit.placement.decision import PlacementDecision
from fabricfit.placement.layout import GROUP_KINDS
from fabricfit.placement.slots import leaf_key, node_sort_key

GPU_PX = 16
GPU_GAP_PX = 3
ROW_PX = 24
LABEL_PX = 96
# A node label's room before the first GPU square, and the advance the layout allows one of its
# 10 px characters (Helvetica averages about 5.5 px; textLength squeezes wider glyphs to fit).
LABEL_ROOM_PX = LABEL_PX - 6
NODE_CHAR_PX = 6.0
PAD_PX = 10
HEADER_PX = 20
FULL_VIEW_NODES = 64
TP_PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#86bcb6",
    "#8cd17d",
    "#d4a6c8",
)
STAGE_PALETTE = (
    "#222222",
    "#7f7f7f",
    "#17becf",
    "#bcbd22",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#1f77b4",
)
RAIL_PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
)
FOREIGN_FILL = "#b8b8b8"
#: Label of a box drawn around the nodes of one multi-node NVLink domain (GB200 NVL72).
NVLINK_BOX = "NVLink domain"
SVG_NS = "http://www.w3.org/2000/svg"
MAX_LISTED_RANKS = 8
LEGEND_COLUMNS = 3
LEGEND_COLUMN_PX = 270
LEGEND_PX = PAD_PX * 2 + LEGEND_COLUMNS * LEGEND_COLUMN_PX


@dataclass(frozen=True, slots=True)
class _Rank:
    rank: int
    tp_group: int
    stage: int


def _rank_info(decision: PlacementDecision) -> dict[tuple[str, int], _Rank]:
    tp_of = {r: i for i, g in enumerate(decision.groups.get("tensor", ())) for r in g}
    stage_of = {r: i for chain in decision.groups.get("pipeline", ()) for i, r in enumerate(chain)}
    return {
        (a.node, a.gpu): _Rank(a.rank, tp_of.get(a.rank, 0), stage_of.get(a.rank, 0))
        for a in decision.assignments
    }


def _visible_nodes(snapshot: ClusterSnapshot, decision: PlacementDecision) -> list[NodeInfo]:
    if len(snapshot.nodes) <= FULL_VIEW_NODES:
        return sorted(snapshot.nodes, key=node_sort_key)
    used = set(decision.pods)
    leaves = {leaf_key(n)[0] for n in snapshot.nodes if n.name in used}
    return sorted((n for n in snapshot.nodes if leaf_key(n)[0] in leaves), key=node_sort_key)


class _Layout:
    """Positions of spines, rail-group columns, racks and node rows."""

    def __init__(self, nodes: Sequence[NodeInfo]) -> None:
        self.boxes: list[tuple[str, float, float, float, float, str]] = []
        self.rows: dict[str, tuple[float, float]] = {}
        self.width = 0.0
        max_gpus = max((n.gpus for n in nodes), default=8)
        self.column_px = LABEL_PX + max_gpus * (GPU_PX + GPU_GAP_PX) + 3 * PAD_PX
        tree: dict[str, dict[str, dict[str, list[NodeInfo]]]] = {}
        trays = Counter(n.place.nvlink_domain for n in nodes)
        for node in nodes:
            spine = node.place.spine or "spine"
            column = node.place.rail_group or f"(no rail group) {node.place.rack or ''}".strip()
            rack = _box_of(node, trays[node.place.nvlink_domain])
            tree.setdefault(spine, {}).setdefault(column, {}).setdefault(rack, []).append(node)
        y = HEADER_PX * 2.0
        for spine, columns in tree.items():
            y = self._spine(spine, columns, y) + PAD_PX
        self.height = y + PAD_PX

    def _spine(self, spine: str, columns: dict[str, dict[str, list[NodeInfo]]], y0: float) -> float:
        x = PAD_PX * 2.0
        bottom = y0 + HEADER_PX
        for column, racks in columns.items():
            bottom = max(bottom, self._column(column, racks, x, y0 + HEADER_PX + PAD_PX))
            x += self.column_px + PAD_PX
        self.boxes.append(("spine", PAD_PX, y0, x, bottom + PAD_PX - y0, f"spine {spine}"))
        self.width = max(self.width, x + PAD_PX * 2)
        return bottom + PAD_PX

    def _column(self, name: str, racks: dict[str, list[NodeInfo]], x: float, y0: float) -> float:
        y = y0 + HEADER_PX
        for rack, members in racks.items():
            top = y
            y += HEADER_PX
            for node in members:
                self.rows[node.name] = (x + PAD_PX, y)
                y += ROW_PX
            kind = "nvlink" if rack.startswith(NVLINK_BOX) else "rack"
            label = rack if kind == "nvlink" else f"rack {rack}"
            self.boxes.append((kind, x + 4, top, self.column_px - 8, y - top + 2, label))
            y += 6
        self.boxes.append(("railgroup", x, y0, self.column_px, y - y0 + 4, f"rail group {name}"))
        return y + 4


def _box_of(node: NodeInfo, trays: int) -> str:
    """The box a node is drawn in: its NVLink domain when that holds several nodes (an NVL72
    rack of trays), else its rack."""
    if trays < 2:
        return node.place.rack or "(no rack)"
    domain = node.place.nvlink_domain.rsplit("/", 1)[-1]
    rack = f", rack {node.place.rack.rsplit('/', 1)[-1]}" if node.place.rack else ""
    return f"{NVLINK_BOX} {domain}{rack}: {trays} trays"


def _node_label(node: NodeInfo, x: float, y: float) -> str:
    """The node's name left of its GPU squares: cut with an ellipsis to the characters the
    label column holds, and held to that width by ``textLength`` (whatever the font's glyphs),
    with the whole name as its tooltip. Kubernetes names run to 63 characters and more."""
    mark = "" if node.available else " ✗"
    room = max(1, int(LABEL_ROOM_PX // NODE_CHAR_PX) - len(mark))
    name = node.name if len(node.name) <= room else node.name[: room - 1] + "…"
    label = name + mark
    width = min(LABEL_ROOM_PX, len(label) * NODE_CHAR_PX)
    tooltip = f"<title>{escape(node.name + mark)}</title>" if name != node.name else ""
    return (
        f'<text x="{x}" y="{y}" class="node" textLength="{width:g}" '
        f'lengthAdjust="spacingAndGlyphs">{escape(label)}{tooltip}</text>'
    )


def _gpu_xy(layout: _Layout, node: str, gpu: int) -> tuple[float, float]:
    x, y = layout.rows[node]
    return x + LABEL_PX + gpu * (GPU_PX + GPU_GAP_PX), y


def _gpu_elements(
    layout: _Layout, node: NodeInfo, ranks: Mapping[tuple[str, int], _Rank], reserved: int
) -> list[str]:
    x, y = layout.rows[node.name]
    out = [_node_label(node, x, y + 12)]
    foreign = node.gpus - node.free_gpus
    for gpu in range(node.gpus):
        gx, gy = _gpu_xy(layout, node.name, gpu)
        info = ranks.get((node.name, gpu))
        if info is not None:
            fill = TP_PALETTE[info.tp_group % len(TP_PALETTE)]
            title = f"rank {info.rank} · TP group {info.tp_group} · stage {info.stage} · GPU {gpu}"
            out.append(
                f'<rect x="{gx}" y="{gy}" width="{GPU_PX}" height="{GPU_PX}" fill="{fill}" '
                f'class="rank"><title>{escape(title)}</title></rect>'
                f'<text x="{gx + GPU_PX / 2}" y="{gy + 11}" class="stage">{info.stage}</text>'
                f'<rect x="{gx}" y="{gy + GPU_PX + 1}" width="{GPU_PX}" height="3" '
                f'class="stageband" fill="{STAGE_PALETTE[info.stage % len(STAGE_PALETTE)]}"/>'
            )
            continue
        kind = _idle_kind(node, gpu, foreign, reserved)
        out.append(
            f'<rect x="{gx}" y="{gy}" width="{GPU_PX}" height="{GPU_PX}" class="{kind}">'
            f"<title>{escape(f'{node.name} GPU {gpu}: {kind}')}</title></rect>"
        )
    return out


def _list(group: Sequence[int]) -> str:
    shown = ", ".join(str(r) for r in group[:MAX_LISTED_RANKS])
    return shown + (", …" if len(group) > MAX_LISTED_RANKS else "")


def _idle_kind(node: NodeInfo, gpu: int, foreign: int, reserved: int) -> str:
    if gpu < foreign:
        return "foreign"
    if not node.available:
        return "unavailable"
    return "reserved" if gpu < foreign + reserved else "free"


def _ring_elements(
    layout: _Layout, decision: PlacementDecision, nodes: Mapping[str, NodeInfo]
) -> list[str]:
    where = {a.rank: (a.node, a.gpu) for a in decision.assignments}
    out: list[str] = []
    for index, group in enumerate(decision.groups.get("data", ())):
        points = [where[r] for r in group if r in where and where[r][0] in layout.rows]
        if len(points) < 2:
            continue
        node, gpu = points[0]
        rail = nodes[node].rail_of(gpu)
        offset = (index % 3 - 1) * 3
        # visit members column by column, top to bottom: a rail-aligned ring is one straight line
        route = sorted(points, key=lambda p: (*layout.rows[p[0]], p[1]))
        coords = " ".join(
            f"{x + GPU_PX / 2 + offset:.1f},{y + GPU_PX / 2:.1f}"
            for x, y in (_gpu_xy(layout, n, g) for n, g in route)
        )
        colour = RAIL_PALETTE[rail % len(RAIL_PALETTE)]
        out.append(
            f'<polyline points="{coords}" class="ring" stroke="{colour}">'
            f"<title>{escape(f'DP group {index} (rail {rail}): ranks {_list(group)}')}</title>"
            "</polyline>"
        )
    return out


STYLE = (
    "text{font-family:Helvetica,Arial,sans-serif;font-size:11px;fill:#222}"
    ".title{font-size:15px;font-weight:bold}.node{font-size:10px}"
    ".stage{font-size:9px;fill:#fff;text-anchor:middle}"
    ".spine{fill:#f4f6fa;stroke:#345;stroke-width:1.5}"
    ".railgroup{fill:#fff;stroke:#789;stroke-dasharray:4 2}"
    ".rack{fill:#fafafa;stroke:#bbb}"
    ".nvlink{fill:#f1f6fc;stroke:#4e79a7;stroke-width:1.5}"
    ".free{fill:#fff;stroke:#999;stroke-dasharray:2 2}"
    f".foreign{{fill:{FOREIGN_FILL};stroke:#888}}"
    ".reserved{fill:url(#hatch);stroke:#888}"
    ".unavailable{fill:#f3d6d6;stroke:#b55}"
    ".rank{stroke:#333;stroke-width:0.5}"
    ".ring{fill:none;stroke-width:1.6;stroke-opacity:0.75}"
)


def build_svg(
    decision: PlacementDecision,
    snapshot: ClusterSnapshot,
    *,
    reservations: Mapping[str, int] = NO_RESERVATIONS,
    title: str = "fabricfit placement",
) -> str:
    """The SVG document (a string) for ``decision`` on ``snapshot``."""
    visible = _visible_nodes(snapshot, decision)
    layout = _Layout(visible)
    ranks = _rank_info(decision)
    body: list[str] = []
    depth = {"spine": 0, "railgroup": 1, "rack": 2, "nvlink": 2}
    for kind, x, y, w, h, label in sorted(layout.boxes, key=lambda box: depth[box[0]]):
        body.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" class="{kind}"/>')
        body.append(f'<text x="{x + 6}" y="{y + 14}">{escape(label)}</text>')
    by_name = {n.name: n for n in visible}
    for node in visible:
        body.extend(_gpu_elements(layout, node, ranks, reservations.get(node.name, 0)))
    body.extend(_ring_elements(layout, decision, by_name))
    hidden = len(snapshot.nodes) - len(visible)
    caption = _caption(decision, hidden)
    width, height = max(layout.width, LEGEND_PX), layout.height + 70
    return (
        "\n".join(
            [
                f'<svg xmlns="{SVG_NS}" width="{width:.0f}" height="{height:.0f}" '
                f'viewBox="0 0 {width:.0f} {height:.0f}">',
                f"<title>{escape(title)}</title>",
                f"<style>{STYLE}</style>",
                '<defs><pattern id="hatch" width="4" height="4" patternUnits="userSpaceOnUse">'
                '<path d="M0,4 L4,0" stroke="#777" stroke-width="1"/></pattern></defs>',
                f'<text x="{PAD_PX}" y="20" class="title">{escape(title)}</text>',
                f'<text x="{PAD_PX}" y="34">{escape(caption)}</text>',
                *body,
                _legend(height - 62),
                "</svg>",
            ]
        )
        + "\n"
    )


def _caption(decision: PlacementDecision, hidden: int) -> str:
    state = "placed" if decision.feasible else "infeasible"
    parts = [f"{state}; fabric {decision.fabric or 'default'}"]
    if decision.feasible and decision.predicted is not None:
        predicted_ms = decision.predicted.step_comm_seconds * 1e3
        parts.append(f"predicted step communication {predicted_ms:.3g} ms")
        parts.append(f"efficiency {decision.efficiency:.1%}")
    sizes = {k: max((len(g) for g in decision.groups.get(k, ())), default=1) for k in GROUP_KINDS}
    if decision.groups:
        parts.append("job " + " · ".join(f"{k} {v}" for k, v in sizes.items()))
    if hidden:
        parts.append(f"{hidden} nodes in untouched rail groups not drawn")
    return "; ".join(parts)


def _legend(y: float) -> str:
    items = [
        ("rank", TP_PALETTE[0], "rank (colour = TP group, number = PP stage)"),
        ("stageband", STAGE_PALETTE[2], "band under a GPU: colour = PP stage"),
        ("free", "", "free GPU"),
        ("foreign", "", "GPU held by other pods"),
        ("reserved", "", "reserved by another plan"),
        ("unavailable", "", "node unavailable (✗)"),
    ]
    parts: list[str] = []
    for index, (kind, fill, label) in enumerate(items):
        x = PAD_PX + (index % LEGEND_COLUMNS) * LEGEND_COLUMN_PX
        row_y = y + (index // LEGEND_COLUMNS) * 18
        fill_attr = f' fill="{fill}"' if fill else ""
        parts.append(
            f'<rect x="{x}" y="{row_y}" width="12" height="12" class="{kind}"{fill_attr}/>'
        )
        parts.append(f'<text x="{x + 16}" y="{row_y + 10}">{escape(label)}</text>')
    x = PAD_PX + (len(items) % LEGEND_COLUMNS) * LEGEND_COLUMN_PX
    row_y = y + (len(items) // LEGEND_COLUMNS) * 18
    parts.append(
        f'<line x1="{x}" y1="{row_y + 6}" x2="{x + 12}" y2="{row_y + 6}" class="ring" '
        f"stroke={quoteattr(RAIL_PALETTE[0])}/>"
    )
    parts.append(f'<text x="{x + 16}" y="{row_y + 10}">data-parallel ring (colour = rail)</text>')
    return "\n".join(parts)
