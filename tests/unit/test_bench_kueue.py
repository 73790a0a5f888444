"""The side-by-side benchmark's pure parts: the annotations a careful Kueue user writes, the
pools per fabric and the table (the run itself needs a cluster: make bench-kueue)."""

from __future__ import annotations

import json

import pytest

import kueue_jobs as jobs  # benchmarks/ is on the path (pytest: pythonpath)
import kueue_side_by_side as bench

JOBS = {j.key: j for j in jobs.JOBS}
H100 = jobs.fabric_shape("dgx-h100", 16)
NVL72 = jobs.fabric_shape("gb200-nvl72", 16)


def test_pools_hold_the_same_gpus_on_every_fabric() -> None:
    assert (H100.gpus_per_node, H100.nodes_per_rail_group, H100.nodes_per_rack) == (8, 16, 4)
    # NVL72: 4-GPU trays in 18-tray racks (one NVLink domain each), two racks per rail group.
    assert (NVL72.gpus_per_node, NVL72.nodes_per_rail_group, NVL72.nvlink_domain_nodes) == (
        4,
        36,
        18,
    )
    assert NVL72.rail_group_gpus >= H100.rail_group_gpus
    fake = NVL72.fake_fabric()
    assert fake.node_count == 144 and fake.fabric == "gb200-nvl72" and fake.pool == NVL72.pool


def test_whole_node_job_in_a_rail_group_is_required_there_then_preferred() -> None:
    ladder = jobs.careful_user_annotations(JOBS["dense"], H100)
    assert ladder == [
        {jobs.REQUIRED: jobs.RAIL_GROUP},
        {jobs.PREFERRED: jobs.RAIL_GROUP},
    ]


def test_partial_node_pods_ask_for_pairs_on_one_node() -> None:
    ladder = jobs.careful_user_annotations(JOBS["moe"], H100)
    assert ladder[0] == {
        jobs.REQUIRED: jobs.RAIL_GROUP,
        jobs.SLICE_LEVEL: jobs.HOSTNAME,
        jobs.SLICE_SIZE: "2",
    }
    assert ladder[-1] == {jobs.PREFERRED: jobs.RAIL_GROUP}
    assert jobs.describe(ladder[0]) == "required rail-group, slice hostname×2"


def test_a_job_larger_than_a_rail_group_gets_the_spine_and_a_stage_per_rail_group() -> None:
    # TP8 PP2 DP16 in whole-node pods: 32 pods, two stages of 16; DP groups live in a stage.
    ladder = jobs.careful_user_annotations(JOBS["wide-dense"], H100)
    first = ladder[0]
    assert first == {
        jobs.REQUIRED: jobs.SPINE,
        jobs.SLICE_LEVEL: jobs.RAIL_GROUP,
        jobs.SLICE_SIZE: "16",
    }
    assert ladder[-1] == {jobs.PREFERRED: jobs.SPINE}
    # 4-GPU pods: the stage layer outside, node pairs inside; looser steps drop layers from
    # the outside in and never repeat themselves.
    nvl = jobs.careful_user_annotations(JOBS["wide-dense"].on(4), NVL72)
    assert json.loads(nvl[0][jobs.SLICE_LAYERS]) == [
        {"topology": jobs.RAIL_GROUP, "size": 32},
        {"topology": jobs.RACK, "size": 2},
    ]
    assert jobs.describe(nvl[0]) == "required spine, slices rail-group×32/rack×2"
    assert nvl[2] == {jobs.PREFERRED: jobs.SPINE, jobs.SLICE_LEVEL: jobs.RACK,
                      jobs.SLICE_SIZE: "2"}  # fmt: skip
    assert len(nvl) == len({json.dumps(step, sort_keys=True) for step in nvl}) == 4
    # Without pipeline stages every DP group spans the job: no outer layer.
    wide = jobs.careful_user_annotations(JOBS["wide-tp4"], H100)[0]
    assert wide == {jobs.REQUIRED: jobs.SPINE, jobs.SLICE_LEVEL: jobs.HOSTNAME,
                    jobs.SLICE_SIZE: "2"}  # fmt: skip


def test_on_nvl72_a_tensor_or_expert_block_of_trays_stays_in_one_rack() -> None:
    dense = JOBS["dense"].on(NVL72.gpus_per_node)  # TP8 over two 4-GPU trays
    assert dense.pods == 32
    step = jobs.careful_user_annotations(dense, NVL72)[0]
    assert (step[jobs.SLICE_LEVEL], step[jobs.SLICE_SIZE]) == (jobs.RACK, "2")
    moe = jobs.careful_user_annotations(JOBS["moe"], NVL72)[0]  # TP2 x EP8 = 16 ranks
    assert (moe[jobs.SLICE_LEVEL], moe[jobs.SLICE_SIZE]) == (jobs.RACK, "4")
    zero3 = jobs.careful_user_annotations(JOBS["zero3"], NVL72)[0]  # TP4 inside a tray
    assert zero3 == {jobs.REQUIRED: jobs.RAIL_GROUP}


def _row(job: str, kueue_ms: float, ours_ms: float) -> bench.Row:
    def side(ms: float) -> bench.Side:
        return bench.Side(["n0"], ms, {"rg-0": 1}, {"spine-0": 1}, 0, 1.0)

    row = bench.Row("dgx-h100", job, job, 1, 8, "preferred rail-group")
    row.kueue, row.fabricfit, row.lower_bound_ms = side(kueue_ms), side(ours_ms), ours_ms
    return row


def test_the_table_says_ties_wins_and_losses_plainly() -> None:
    rows = [_row("a", 100.0, 100.2), _row("b", 182.0, 100.0), _row("c", 90.0, 100.0)]
    lines = bench.markdown(rows)
    assert "| tie |" in lines[2]
    assert "fabricfit 1.82× less" in lines[3]
    assert "**fabricfit worse** (1.11×)" in lines[4]
    summary = [ln for ln in lines if ln.startswith("| dgx-h100 | 3 |")]
    assert summary == ["| dgx-h100 | 3 | 1 | 1 | 1 | 1.24× | 1.18× |"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--jobs", "dense,huge"], "unknown job 'huge'"),
        (["--fabrics", "nvl-9000"], "unknown fabric 'nvl-9000'"),
        (["--tenant-share", "0.95"], "--tenant-share must be between 0 and 0.9"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        bench.parse_args(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_fabricfit_goes_through_kueue_when_the_operator_can() -> None:
    assert bench.fabricfit_mode("pinned") == "pinned"
    expected = "admission-check" if bench.admission_check_available() else "pinned"
    assert bench.fabricfit_mode("auto") == expected
    spec = jobs.topology_spec(JOBS["zero3"], "admission-check")
    assert spec["placement"]["mode"] == "admission-check" and spec["gpusPerPod"] == 4


def test_the_busy_scenario_loads_one_spine_and_holds_as_much_of_the_other() -> None:
    import side_by_side_busy as busy
    from fabricfit_dev.cluster import fakenodes

    manifests = fakenodes.node_manifests(H100.fake_fabric())
    layout = busy.busy_layout(manifests, H100.nodes_per_rail_group)
    labels = {m["metadata"]["name"]: m["metadata"]["labels"] for m in manifests}

    def where(node: str) -> tuple[str, str]:
        return labels[node][busy.SPINE], labels[node][busy.RAIL_GROUP]

    assert len(layout.jobs) == 8 and len(layout.tenants) == 16
    for _, (a, b) in layout.jobs:  # one node in each rail group of spine 0: the rings climb
        assert where(a)[0] == where(b)[0] == "spine-0" and where(a)[1] != where(b)[1]
    busy_nodes = [n for _, pair in layout.jobs for n in pair]
    assert len(set(busy_nodes)) == 16 and not set(busy_nodes) & set(layout.tenants)
    held = [where(n) for n in layout.tenants]
    assert {s for s, _ in held} == {"spine-1"}
    assert sorted(held).count(held[0]) == 8  # as many nodes in each of its two rail groups


def test_the_busy_table_shows_the_price_with_neighbours_alone_and_what_each_adds() -> None:
    import side_by_side_busy as busy

    def side(ms: float, alone: float, adds: float) -> bench.Side:
        return bench.Side([], ms, {"rg-0": 2}, {"spine-0": 2}, 0, 1.0,
                          alone_ms=alone, adds_ms=adds)  # fmt: skip

    row = bench.Row("h100-rail-only", "dense", "dense", 2, 8, "preferred rail-group")
    row.kueue, row.fabricfit = side(600.0, 550.0, 12.0), side(550.0, 550.0, 0.0)
    lines = busy.busy_markdown([row], bench.verdict, bench.TIE)
    assert "| 600.0 (550.0) | 12.0 | 550.0 (550.0) | 0.0 | fabricfit 1.09× less |" in lines[2]
    assert lines[-1] == "| all | 1 | 0 | 1 | 0 | 1.09× | 12.0 / 0.0 |"
