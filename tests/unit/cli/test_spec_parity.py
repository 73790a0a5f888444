"""``fabricfit plan`` reads a spec as the API server does: CRD field names only (a snake_case key
is refused with the CRD's name for it, as the API server knows no such field), and the fields it
prices with defaults are named in the text and in ``--json`` (``defaulted``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fabricfit.api.crd import build_crd
from fabricfit.cli.main import main

NODES = str(Path(__file__).resolve().parents[2] / "fixtures" / "nodes" / "native-h100-16.json")
FULL_MODEL = (
    "{parameters: 7000000000, hiddenSize: 4096, layers: 32, sequenceLength: 4096, "
    "microBatchSize: 1, microBatches: 8, bytesPerElement: 2, experts: 0, topK: 0, zeroStage: 1}"
)

SNAKE_CASE = {
    "gpus_per_pod": ("gpus_per_pod: 8\n", ("gpus_per_pod",), "gpusPerPod"),
    "label_scheme": ("label_scheme: auto\n", ("label_scheme",), "labelScheme"),
    "rank_order": ("rank_order: tp-cp-ep-dp-pp\n", ("rank_order",), "rankOrder"),
    "model.hidden_size": (
        "model: {hidden_size: 8192}\n",
        ("model", "hidden_size"),
        "hiddenSize",
    ),
    "model.micro_batches": (
        "model: {micro_batches: 16}\n",
        ("model", "micro_batches"),
        "microBatches",
    ),
    "workloadRef.api_version": (
        "workloadRef: {api_version: batch/v1, kind: Job, name: x}\n",
        ("workloadRef", "api_version"),
        "apiVersion",
    ),
    "placement.spares.nodes_per_nvlink_domain": (
        "placement: {spares: {nodes_per_nvlink_domain: 1}}\n",
        ("placement", "spares", "nodes_per_nvlink_domain"),
        "nodesPerNvlinkDomain",
    ),
}


def _plan(capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, *extra: str) -> Any:
    topology = tmp_path / "tt.yaml"
    topology.write_text(body, encoding="utf-8")
    try:
        code = main(["plan", "--nodes", NODES, "--topology", str(topology), *extra])
    except SystemExit as done:
        code = int(done.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _crd_properties(path: tuple[str, ...]) -> set[str]:
    """The property names the CRD's schema has at ``path`` inside ``spec``."""
    schema = build_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    node = schema["properties"]["spec"]
    for part in path:
        node = node["properties"][part]
    return set(node["properties"])


@pytest.mark.parametrize(("body", "path", "crd_name"), SNAKE_CASE.values(), ids=SNAKE_CASE.keys())
def test_snake_case_keys_are_refused_with_the_crd_name(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    body: str,
    path: tuple[str, ...],
    crd_name: str,
) -> None:
    # The API server has no such field: only the camelCase one.
    known = _crd_properties(path[:-1])
    assert path[-1] not in known and crd_name in known
    code, out, err = _plan(capsys, tmp_path, body)
    where = "spec." + ".".join(path)
    assert (code, out) == (2, "")
    assert f"{where}: is not a field of a TrainingTopology spec (did you mean {crd_name}?)" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("body", "defaulted"),
    [
        ("parallelism: {tensor: 8, data: 2}\n", ["gpusPerPod", "model"]),
        ("gpusPerPod: 8\nparallelism: {tensor: 8}\n", ["model"]),
        (
            "gpusPerPod: 8\nparallelism: {tensor: 8}\n"
            "model: {parameters: 7000000000, hiddenSize: 4096, layers: 32, "
            "sequenceLength: 4096, microBatchSize: 1, microBatches: 8, bytesPerElement: 2}\n",
            ["model.experts", "model.topK", "model.zeroStage"],
        ),
        (f"gpusPerPod: 8\nparallelism: {{tensor: 8}}\nmodel: {FULL_MODEL}\n", []),
    ],
    ids=["no gpusPerPod, no model", "no model", "part of a model", "nothing defaulted"],
)
def test_json_names_the_defaulted_fields(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, defaulted: list[str]
) -> None:
    code, out, err = _plan(capsys, tmp_path, body, "--json")
    assert code == 0, err
    assert json.loads(out)["defaulted"] == defaulted


def test_text_names_the_defaulted_fields_and_their_values(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _plan(capsys, tmp_path, "parallelism: {tensor: 8, data: 2}\n")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("defaulted"))
    assert line.startswith(
        "defaulted (not in the spec): gpusPerPod 8; model (parameters 7,000,000,000, "
        "hiddenSize 4,096, layers 32,"
    )
    body = f"gpusPerPod: 8\nparallelism: {{tensor: 8}}\nmodel: {FULL_MODEL}\n"
    code, out, _ = _plan(capsys, tmp_path, body)
    assert code == 0 and "defaulted" not in out
