"""Text summary and SVG views of a placement decision."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

from fabricfit.api.models import Parallelism
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.decision import (
    LargestFit,
    PlacementDecision,
    RankPlacement,
    StepTimes,
)
from fabricfit.placement.layout import build_layout
from fabricfit.render.summary import build_summary, format_seconds, render_summary
from fabricfit.render.svg import build_svg
from unit.placement.clusters import make_cluster

SVG = "{http://www.w3.org/2000/svg}"


def _decision(
    nodes: list[str], tensor: int = 8, pipeline: int = 2, data: int = 2
) -> PlacementDecision:
    layout = build_layout(
        Parallelism(tensor=tensor, pipeline=pipeline, data=data), 8, "tp-cp-ep-dp-pp"
    )
    assignments = tuple(
        RankPlacement(rank=r, node=nodes[r // 8], gpu=r % 8, pod=r // 8, local=r % 8)
        for r in range(layout.world_size)
    )
    times = StepTimes(0.0123, {"tensor": 0.01, "data": 0.002, "pipeline": 0.0003})
    return PlacementDecision(
        feasible=True,
        fabric="dgx-h100",
        groups=layout.groups,
        pods=tuple(nodes),
        assignments=assignments,
        predicted=times,
        lower_bound=StepTimes(0.0110, {"tensor": 0.01, "data": 0.001}),
        reasons=("1 of 8 data-parallel groups span more than one rail group",),
        scores={"communication-time": 89.4},
        candidate="leaf s0|rg:s0/rg0, node-major, best-fit",
    )


def test_format_seconds() -> None:
    assert format_seconds(2.5) == "2.5 s"
    assert format_seconds(0.0123) == "12.3 ms"
    assert format_seconds(4.2e-5) == "42 µs"


def test_summary_lists_pods_by_rail_group() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=2)
    decision = _decision(["n000", "n001", "n002", "n003"])
    lines = build_summary(decision, snapshot)
    text = "\n".join(lines)
    assert lines[0] == "fabricfit plan: PLACED"
    assert "efficiency 89.4%" in text
    assert "spine s0 / rail group s0/rg0" in text and "spine s0 / rail group s0/rg1" in text
    assert "pod 3    n003" in text
    assert "ranks 24-31" in text and "stage 1" in text
    assert "unmet preferences:" in text


def test_summary_of_infeasible_plan() -> None:
    decision = PlacementDecision(
        feasible=False,
        fabric="dgx-h100",
        groups={},
        reasons=("the job needs 4 pods",),
        largest_feasible=LargestFit(pods=2, world_size=16, data=1),
    )
    text = render_summary(decision)
    assert text.startswith("fabricfit plan: INFEASIBLE\nreasons:\n  - the job needs 4 pods")
    assert "largest job of this shape that fits now: 16 GPUs (2 pods" in text


def test_svg_is_well_formed_and_complete() -> None:
    snapshot = make_cluster(rail_groups_per_spine=2, nodes_per_rail_group=4, used={"n005": 3})
    decision = _decision(["n000", "n001", "n004", "n006"])
    root = ET.fromstring(build_svg(decision, snapshot, reservations={"n007": 2}))
    assert root.tag == f"{SVG}svg"
    rects = root.findall(f".//{SVG}rect")
    classes = [r.get("class") for r in rects]
    assert classes.count("rank") == 32 + 1  # + legend swatch
    assert classes.count("foreign") == 3 + 1  # n005's three + legend swatch
    assert classes.count("reserved") == 2 + 1
    assert classes.count("railgroup") == 2 and classes.count("spine") == 1
    rings = root.findall(f".//{SVG}polyline")
    assert len(rings) == len(decision.groups["data"])
    texts = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "rail group s0/rg0" in texts and "rack s0/rg1/r0" in texts


def test_svg_rail_aligned_ring_is_vertical() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=4)
    decision = _decision(["n000", "n001", "n002", "n003"], pipeline=1, data=4)
    root = ET.fromstring(build_svg(decision, snapshot))
    for ring in root.findall(f".//{SVG}polyline"):
        xs = {p.split(",")[0] for p in (ring.get("points") or "").split()}
        assert len(xs) == 1


def test_svg_escapes_names() -> None:
    snapshot = make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=1)
    decision = _decision(["n000"], pipeline=1, data=1)
    svg = build_svg(decision, snapshot, title='plan <"a&b">')
    assert ET.fromstring(svg).find(f"{SVG}title").text == 'plan <"a&b">'  # type: ignore[union-attr]


def test_large_cluster_draws_only_touched_rail_groups() -> None:
    snapshot = make_cluster(spines=2, rail_groups_per_spine=4, nodes_per_rail_group=16)
    decision = _decision(["n000", "n001", "n002", "n003"])
    root = ET.fromstring(build_svg(decision, snapshot))
    names = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "node"]
    assert len(names) == 16
    assert any(
        "112 nodes in untouched rail groups" in (t.text or "") for t in root.iter(f"{SVG}text")
    )


def test_svg_boxes_the_trays_of_an_nvl72_rack_as_its_nvlink_domain() -> None:
    from pathlib import Path

    import yaml

    from fabricfit.fabric.snapshot import build_snapshot

    fixture = Path(__file__).parents[2] / "fixtures/nodes/native-gb200-2x18.yaml"
    snapshot = build_snapshot(yaml.safe_load(fixture.read_text())["items"])
    trays = [n.name for n in snapshot.nodes[:4]]
    layout = build_layout(Parallelism(tensor=8, data=2), 4, "tp-cp-ep-dp-pp")
    decision = PlacementDecision(
        feasible=True,
        fabric="gb200-nvl72",
        groups=layout.groups,
        pods=tuple(trays),
        assignments=tuple(
            RankPlacement(rank=r, node=trays[r // 4], gpu=r % 4, pod=r // 4, local=r % 4)
            for r in range(16)
        ),
    )
    root = ET.fromstring(build_svg(decision, snapshot))
    boxes = [e for e in root.iter(f"{SVG}rect") if e.get("class") == "nvlink"]
    labels = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert len(boxes) == 2 and not [e for e in root.iter(f"{SVG}rect") if e.get("class") == "rack"]
    assert sum(label.startswith("NVLink domain nvl-") for label in labels) == 2
    assert any(label.endswith(": 18 trays") and "rack rack-0" in label for label in labels)


# A lower bound on the advance of a 10 px sans-serif glyph, for labels the SVG gives no
# textLength (Helvetica's digits are 5.56 px, its lowercase letters 5.0 px on average).
NARROWEST_MEAN_GLYPH_PX = 4.5


def _renamed(snapshot: ClusterSnapshot, names: dict[str, str]) -> ClusterSnapshot:
    nodes = tuple(dataclasses.replace(n, name=names.get(n.name, n.name)) for n in snapshot.nodes)
    return dataclasses.replace(snapshot, nodes=nodes)


def test_long_node_names_end_before_the_gpu_squares() -> None:
    """A 63-character node name (the longest a hostname label holds) once ran over its row's
    GPU squares; from the SVG's own coordinates, every node label ends before the first
    square of its row, and the full name is the label's tooltip."""
    long_name = "gke-a3-ultra-training-pool-7f3c9e2b-worker-node-x7k2p-0123456789"[:63]
    names = {"n000": long_name, "n001": long_name[:-1] + "q"}
    snapshot = _renamed(make_cluster(rail_groups_per_spine=1, nodes_per_rail_group=4), names)
    decision = _decision([long_name, long_name[:-1] + "q", "n002", "n003"], pipeline=1, data=4)
    root = ET.fromstring(build_svg(decision, snapshot))
    labels = [t for t in root.iter(f"{SVG}text") if t.get("class") == "node"]
    assert len(labels) == 4
    squares = [r for r in root.iter(f"{SVG}rect") if r.get("width") == r.get("height") == "16"]
    for label in labels:
        x, y = float(label.get("x") or 0), float(label.get("y") or 0)
        row = [float(r.get("x") or 0) for r in squares if float(r.get("y") or 0) == y - 12]
        assert row, "every node row has its GPU squares"
        text = label.text or ""
        fitted = label.get("textLength")
        width = float(fitted) if fitted else len(text) * NARROWEST_MEAN_GLYPH_PX
        assert x + width <= min(row), (text, x + width, min(row))
        tooltip = label.find(f"{SVG}title")
        full = tooltip.text if tooltip is not None else text
        assert full in (long_name, long_name[:-1] + "q", "n002", "n003")
        if full != text:
            assert text.endswith("…") and full.startswith(text[:-1])
