"""``fabricfit cost``: flags, JSON and human output, one-line errors with exit code 2."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.cli.common import UsageError
from fabricfit.cli.cost import build_group, group_shape, parse_size
from fabricfit.cli.main import main
from fabricfit.cost import summarize_group
from fabricfit.fabric.profiles import PRESETS

BASE = ["cost", "--fabric", "dgx-h100", "--collective", "all-reduce", "--size", "1GiB"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_the_contract_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([*BASE, "--nodes", "4", "--gpus-per-node", "8", "--json"], capsys)
    assert (code, err) == (0, "")
    body = json.loads(out)
    for key in (
        "seconds",
        "algorithm",
        "algbw_gb_per_s",
        "busbw_gb_per_s",
        "protocol",
        "bottleneck",
    ):
        assert key in body
    assert body["ranks"] == 32 and body["size_bytes"] == 1 << 30 and body["fabric"] == "dgx-h100"
    assert body["algbw_gb_per_s"] == pytest.approx(body["size_bytes"] / body["seconds"] / 1e9)
    assert len(out.strip().splitlines()) == 1


def test_human_output_is_a_small_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*BASE, "--nodes", "1", "--gpus-per-node", "8"], capsys)
    assert code == 0
    labels = [line.split()[0] for line in out.splitlines()]
    assert labels == [
        "fabric",
        "collective",
        "ranks",
        "algorithm",
        "time",
        "algbw",
        "busbw",
        "bottleneck",
        "measured",
    ]
    assert "nvls" in out and "GB/s" in out


def test_prediction_says_how_right_the_model_was_in_its_regime(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The regime's summary from the published rows: 1 GiB all-reduce inside one H100 node is
    a band with dozens of rows; broadcast has none."""
    code, out, _ = run([*BASE, "--nodes", "1", "--gpus-per-node", "8", "--json"], capsys)
    found = json.loads(out)["accuracy"]
    assert code == 0 and found["metric"] == "busbw_error"
    assert (found["size_band"], found["scope"], found["collective"]) == (
        ">=256MiB",
        "1 domain",
        "all-reduce",
    )
    assert found["rows"] >= 20 and 0 < found["fitted_rows"] < found["rows"]
    assert 0 <= found["median"] <= found["worst"] < 1
    assert found["fitted_rows"] and found["fitted_median"] <= found["fitted_worst"]
    assert found["held_out_median"] <= found["held_out_worst"] and found["at_scale"] is None
    code, out, _ = run([*BASE, "--nodes", "1", "--gpus-per-node", "8"], capsys)
    held = found["rows"] - found["fitted_rows"]
    assert f"over {found['rows']} published rows of dgx-h100's hardware" in out
    assert f": {held} held out (median {found['held_out_median']:.1%}" in out
    assert f", {found['fitted_rows']} fitted (median {found['fitted_median']:.1%}" in out
    latency = [*BASE[:-1], "8KiB", "--nodes", "2", "--gpus-per-node", "8", "--json"]
    code, out, _ = run(latency, capsys)
    found = json.loads(out)["accuracy"]
    assert (found["metric"], found["scope"]) == ("time_ratio", "2-4 domains")
    assert found["median"] >= 1
    broadcast = ["cost", "--fabric", "dgx-h100", "--collective", "broadcast", "--size", "1MiB"]
    code, out, _ = run([*broadcast, "--nodes", "2", "--gpus-per-node", "8", "--json"], capsys)
    assert (code, json.loads(out)["accuracy"]) == (0, None)
    code, out, _ = run([*broadcast, "--nodes", "2", "--gpus-per-node", "8"], capsys)
    assert "measured    no published rows of dgx-h100's hardware (dgx-h100, dgx-h200" in out


def test_a_preset_is_judged_on_its_own_hardwares_rows_and_says_when_there_are_none(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The issue's case: aws-p5 at 32 x 8 quoted 40 rows of other clusters (InfiniBand H100s).
    Across domains only aws-p5's own EFA rows count, and it has none at 32 nodes; inside one
    node its HGX H100 board's rows do."""
    argv = ["cost", "--fabric", "aws-p5", "--collective", "all-reduce", "--size", "64MiB"]
    code, out, _ = run([*argv, "--nodes", "32", "--gpus-per-node", "8", "--json"], capsys)
    found = json.loads(out)["accuracy"]
    assert code == 0 and found["rows"] == 0 and found["fabrics"] == ["aws-p5"]
    assert found["median"] is None and found["meets_targets"] is None
    assert found["note"].startswith("no published rows of aws-p5's hardware in this regime")
    code, out, _ = run([*argv, "--nodes", "32", "--gpus-per-node", "8"], capsys)
    assert "measured    no published rows of aws-p5's hardware in this regime" in out
    code, out, _ = run(
        [*argv[:-1], "1GiB", "--nodes", "1", "--gpus-per-node", "8", "--json"], capsys
    )
    board = json.loads(out)["accuracy"]
    assert {"aws-p5", "dgx-h100"} <= set(board["fabrics"]) and board["rows"] > 0


def test_at_scale_the_model_says_how_optimistic_the_held_out_rows_found_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """>= 8 domains at 4-256 MiB: the figure comes from every held-out row there (whoever's
    cluster), in the measured line and in --json; not outside that window."""
    argv = ["cost", "--fabric", "dgx-h100", "--collective", "all-gather", "--size"]
    code, out, _ = run([*argv, "64MiB", "--nodes", "10", "--gpus-per-node", "8", "--json"], capsys)
    assert code == 0
    scale = json.loads(out)["accuracy"]["at_scale"]
    assert scale["held_out_rows"] >= 3 and scale["sources"] >= 2
    assert scale["least_ratio"] <= scale["median_ratio"] <= scale["worst_ratio"]
    assert scale["worst_ratio"] > 1 and scale["optimistic_rows"] > 0
    assert scale["statement"].startswith("at >=8 domains for 4-256 MiB the model ")
    _, out, _ = run([*argv, "64MiB", "--nodes", "10", "--gpus-per-node", "8"], capsys)
    assert out.splitlines()[-1].endswith(scale["statement"])
    for size, nodes in (("1GiB", "10"), ("1MiB", "10"), ("64MiB", "4")):
        _, out, _ = run([*argv, size, "--nodes", nodes, "--gpus-per-node", "8", "--json"], capsys)
        accuracy = json.loads(out)["accuracy"]
        assert accuracy is None or accuracy["at_scale"] is None, (size, nodes)


def test_docs_quote_the_measured_line_cost_prints(capsys: pytest.CaptureFixture[str]) -> None:
    page = Path(__file__).resolve().parents[3] / "docs" / "concepts" / "cost-model.md"
    readme = page.read_text(encoding="utf-8")
    argv = ["cost", "--fabric", "dgx-h100", "--collective", "all-gather", "--size", "64MiB"]
    code, out, _ = run([*argv, "--nodes", "10", "--gpus-per-node", "8"], capsys)
    assert code == 0 and f"fabricfit {' '.join(argv)} --nodes 10 --gpus-per-node 8" in readme
    assert out.splitlines()[-1] in readme.splitlines()


def test_gb200_nodes_are_trays_and_two_racks_cross_the_network(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = [
        "cost",
        "--fabric",
        "gb200-nvl72",
        "--collective",
        "all-gather",
        "--size",
        "8GiB",
        "--json",
    ]
    _, one_rack, _ = run([*argv, "--nodes", "18", "--gpus-per-node", "4"], capsys)
    _, two_racks, _ = run([*argv, "--nodes", "36", "--gpus-per-node", "4"], capsys)
    assert json.loads(one_rack)["ranks"] == 72 and json.loads(one_rack)["bottleneck"] == "nvlink"
    assert json.loads(two_racks)["ranks"] == 144


def test_nics_override_and_forced_algorithm(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*BASE, "--nodes", "8", "--gpus-per-node", "8", "--algorithm", "ring", "--json"]
    _, eight, _ = run(argv, capsys)
    _, two, _ = run([*argv, "--nics-per-node", "2"], capsys)
    assert json.loads(eight)["algorithm"] == "ring"
    assert json.loads(two)["busbw_gb_per_s"] < json.loads(eight)["busbw_gb_per_s"] / 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--fabric", "dgx-z900", "--nodes", "1", "--gpus-per-node", "8"],
            "unknown fabric profile",
        ),
        (
            ["--collective", "gossip", "--nodes", "1", "--gpus-per-node", "8"],
            "unknown --collective",
        ),
        (["--size", "12 parsecs", "--nodes", "1", "--gpus-per-node", "8"], "invalid --size"),
        (["--size", "0", "--nodes", "1", "--gpus-per-node", "8"], "invalid --size"),
        (["--nodes", "0", "--gpus-per-node", "8"], "--nodes must be"),
        (["--nodes", "two", "--gpus-per-node", "8"], "--nodes"),
        (["--nodes", "1", "--gpus-per-node", "9"], "--gpus-per-node must be between 1 and 8"),
        (["--nodes", "1", "--gpus-per-node", "8", "--nics-per-node", "0"], "--nics-per-node"),
        (["--nodes", "1", "--gpus-per-node", "8", "--algorithm", "magic"], "--algorithm"),
        (
            ["--fabric", "dgx-a100", "--nodes", "1", "--gpus-per-node", "8", "--algorithm", "nvls"],
            "no",
        ),
        (
            ["--fabric", "tpu-v4", "--nodes", "4", "--gpus-per-node", "4", "--algorithm", "tree"],
            "torus",
        ),
        (
            [
                "--collective",
                "all-gather",
                "--nodes",
                "2",
                "--gpus-per-node",
                "8",
                "--algorithm",
                "tree",
            ],
            "tree",
        ),
        (["--nodes", "1"], "required"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run([*BASE, *extra], capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),
        ("64KiB", 65536),
        ("1 MiB", 1 << 20),
        ("2GiB", 2 << 30),
        ("3KB", 3000),
        ("5MB", 5 * 10**6),
        ("1GB", 10**9),
        ("10B", 10),
        ("1.5GiB", 3 << 29),
        ("8gib", 8 << 30),
        ("1Gi", 1 << 30),
        ("512Mi", 512 << 20),
        ("64Ki", 65536),
        ("1G", 10**9),
        ("1e9", 10**9),
        ("4k", 4000),
        ("1.5Ki", 1536),
        ("2TiB", 2 << 40),
    ],
)
def test_size_units(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("9" * 400, "is longer than 64 characters"),
        ("9" * 30, "must be between 1 byte and 1,125,899,906,842,624 bytes"),
        ("1e99", "must be between 1 byte"),
        ("0", "must be between 1 byte"),
        ("500m", "must be between 1 byte"),  # a milli-byte rounds to nothing
        ("1 GB/s", "is not a size"),
        ("½GiB", "is not a size"),
    ],
)
def test_bad_sizes_are_one_bounded_line(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_size(text)
    assert fragment in str(caught.value) and len(str(caught.value)) < 200


def test_cost_does_not_import_kopf_or_kubernetes() -> None:
    code = (
        "import sys; from fabricfit.cli.main import main;"
        "rc = main(['cost','--fabric','tpu-v5e','--collective','all-gather','--size','1MiB',"
        "'--nodes','4','--gpus-per-node','4','--json']);"
        "assert rc == 0; assert 'kopf' not in sys.modules and 'kubernetes' not in sys.modules"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["algorithm"] == "torus"


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    fabric=st.sampled_from(sorted(PRESETS)),
    nodes=st.integers(1, 80),
    gpus=st.integers(1, 8),
    nics=st.sampled_from([None, 1, 2, 3, 8]),
)
def test_the_shape_from_the_tiers_is_the_shape_of_the_ranks(
    fabric: str, nodes: int, gpus: int, nics: int | None
) -> None:
    """``cost`` summarises its ranks from the tiers (O(1)); it must be the shape the cost
    model would fold from one slot per rank."""
    profile = PRESETS[fabric]
    gpus = min(gpus, profile.gpus_per_node)
    if nics is not None:
        profile = dataclasses.replace(profile, nics_per_node=nics)
    expected = summarize_group(build_group(profile, nodes, gpus))
    assert group_shape(profile, nodes, gpus) == expected


def test_the_largest_cost_question_is_answered_without_a_slot_per_rank(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """65,536 nodes of 64 GPUs (a custom profile) took 27 s and 1.9 GB: a slot per rank. The
    same question on a preset's 8-GPU nodes (524,288 ranks) held 250 MB of slots; the shape is
    now built from the tiers (peak traced memory, not time: the machine's load does not
    change it)."""
    tracemalloc.start()
    try:
        code, out, err = run([*BASE, "--nodes", "65536", "--gpus-per-node", "8", "--json"], capsys)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (code, err) == (0, "")
    assert json.loads(out)["ranks"] == 65536 * 8
    assert peak_bytes < 16 * 2**20, peak_bytes
