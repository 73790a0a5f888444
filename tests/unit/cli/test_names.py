"""A mistyped name — preset, collective, label scheme, subcommand, shell, workload kind, spec field
or placement mode — is one line on stderr naming what was most likely meant, and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricfit.cli.main import main
from fabricfit.fabric.names import MAX_GUESS_CHARS, camel, closest, unknown_name

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NODES = str(FIXTURES / "nodes" / "native-h100-16.json")
LOG = str(FIXTURES / "nccl-tests" / "a100-2x8-oci-roce-all-reduce.log")
COST = ["cost", "--size", "1GiB", "--nodes", "2", "--gpus-per-node", "8"]

FLAGS = {
    "preset in cost": (
        [*COST, "--fabric", "dgx-h10", "--collective", "all-reduce"],
        "fabricfit cost: unknown fabric profile 'dgx-h10' (did you mean dgx-h100?)",
    ),
    "collective in cost": (
        [*COST, "--fabric", "dgx-h100", "--collective", "allreduce"],
        "fabricfit cost: unknown --collective 'allreduce' (did you mean all-reduce?)",
    ),
    "collective in calibrate": (
        ["calibrate", LOG, "--collective", "all_gather"],
        "fabricfit calibrate: unknown --collective 'all_gather' (did you mean all-gather?)",
    ),
    "preset in calibrate": (
        ["calibrate", LOG, "--collective", "all-reduce", "--fabric", "dgx-a10"],
        "fabricfit calibrate: unknown fabric profile 'dgx-a10' (did you mean dgx-a100?)",
    ),
    "preset in run": (
        ["run", "--fabric", "dgx-h10", "--fabric-dir", "/nonexistent"],
        "fabricfit run: --fabric: unknown fabric profile 'dgx-h10' (did you mean dgx-h100?)",
    ),
    "label scheme": (
        ["inspect", "--nodes", NODES, "--label-scheme", "topgraph"],
        "fabricfit inspect: unknown --label-scheme 'topgraph' (did you mean topograph?)",
    ),
    "label scheme in another case": (
        ["inspect", "--nodes", NODES, "--label-scheme", "GKE"],
        "fabricfit inspect: unknown --label-scheme 'GKE' (did you mean gke?)",
    ),
    "subcommand": (["plna"], "fabricfit: unknown command 'plna' (did you mean plan?)"),
    "subcommand far from any": (
        ["frobnicate"],
        "fabricfit: unknown command 'frobnicate' (one of run, plan, cost,",
    ),
    "algorithm": (
        [*COST, "--fabric", "dgx-h100", "--collective", "all-reduce", "--algorithm", "rign"],
        "fabricfit cost: unknown --algorithm 'rign' (did you mean ring?)",
    ),
    "shell": (
        ["completion", "zhs"],
        "fabricfit completion: unknown shell 'zhs' (did you mean zsh?)",
    ),
    "output format": (
        [*COST, "--fabric", "dgx-h100", "--collective", "all-reduce", "-o", "jsn"],
        "fabricfit cost: unknown --output 'jsn' (did you mean json?)",
    ),
}

SPECS = {
    "preset in the spec": ("fabric: dgx-h10\n", "unknown fabric profile 'dgx-h10' (did you mean"),
    "workload kind": (
        "workloadRef: {apiVersion: batch/v1, kind: Jobb, name: x}\n",
        "workload kind Jobb is not supported (did you mean Job?)",
    ),
    "placement mode": (
        "placement: {mode: pined}\n",
        "spec.placement.mode: must be one of 'pinned', 'admission-check', 'kueue-tas' or "
        "'advisory', got 'pined' (did you mean pinned?)",
    ),
    "label scheme in the spec": (
        "labelScheme: topgraph\n",
        "got 'topgraph' (did you mean topograph?)",
    ),
    "a field in snake_case": (
        "model: {hidden_size: 8192}\n",
        "spec.model.hidden_size: is not a field of a TrainingTopology spec (did you mean "
        "hiddenSize?)",
    ),
    "a misspelt field": (
        "parallelism: {tensr: 8}\n",
        "spec.parallelism.tensr: is not a field of a TrainingTopology spec (did you mean tensor?)",
    ),
}


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as done:
        code = int(done.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("argv", "expected"), FLAGS.values(), ids=FLAGS.keys())
def test_a_mistyped_name_on_the_command_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    code, out, err = _run(capsys, argv)
    assert (code, out) == (2, "")
    assert err.startswith(expected) and err.count("\n") == 1, err


@pytest.mark.parametrize(("body", "expected"), SPECS.values(), ids=SPECS.keys())
def test_a_mistyped_name_in_a_topology_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, expected: str
) -> None:
    topology = tmp_path / "tt.yaml"
    topology.write_text(body, encoding="utf-8")
    code, out, err = _run(capsys, ["plan", "--nodes", NODES, "--topology", str(topology)])
    assert (code, out) == (2, "")
    assert expected in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("given", "known", "expected"),
    [
        ("dgx-h10", ["dgx-h100", "dgx-a100"], "dgx-h100"),
        ("Topograph", ["topograph", "gke"], "topograph"),
        ("eks", ["gke", "oke", "topograph"], None),  # gke and oke are each one letter away
        ("hidden_size", ["hiddenSize", "layers"], "hiddenSize"),
        ("micro_batches", ["microBatchSize", "microBatches"], "microBatches"),
        ("zzzz", ["plan", "cost"], None),
        ("zhs", ["bash", "zsh"], "zsh"),
        ("p" * (MAX_GUESS_CHARS + 1), ["p" * MAX_GUESS_CHARS], None),
        (7, ["7"], None),
    ],
)
def test_closest(given: object, known: list[str], expected: str | None) -> None:
    assert closest(given, known) == expected


def test_unknown_name_lists_the_names_when_none_is_close() -> None:
    assert unknown_name("shell", "tcsh", ["bash", "zsh", "fish"]) == (
        "unknown shell 'tcsh' (one of bash, zsh, fish)"
    )
    assert unknown_name("x", "q" * 500, ["a"], "presets: a").endswith("... (presets: a)")
    assert camel("bytes_per_element") == "bytesPerElement"
