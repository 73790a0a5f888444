"""`fabricfit inspect`: text and JSON of what was detected, bad input is one line and exit 2,
and the command loads neither kopf nor the Kubernetes client."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabricfit.cli.main import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nodes"
GKE = FIXTURES / "gke-a3ultra-12.json"
NATIVE = FIXTURES / "native-h100-16.json"


def test_json_names_tiers_domains_labels_and_unlabelled_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", "--nodes", str(GKE), "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert (body["labelScheme"], body["scheme"], body["topologyDetected"]) == ("auto", "gke", True)
    tiers = {t["tier"]: t for t in body["tiers"]}
    assert tiers["rail_group"]["labels"] == ["cloud.google.com/gce-topology-subblock"]
    assert sum(d["nodes"] for d in tiers["rail_group"]["domains"]) == body["nodes"] == 12
    assert all(d["freeGpus"] <= d["gpus"] for t in body["tiers"] for d in t["domains"])
    assert body["nodesWithoutTopology"] == []


def test_wrong_scheme_is_flat(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--nodes", str(GKE), "--label-scheme", "native"]) == 0
    out = capsys.readouterr().out
    assert "finds no topology tier on any of the 12 nodes" in out
    assert "nodes without topology labels (12)" in out


def test_pods_reduce_the_free_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    pods = FIXTURES / "native-h100-16-pods.json"
    assert main(["inspect", "--nodes", str(NATIVE), "--json"]) == 0
    before = json.loads(capsys.readouterr().out)["freeGpus"]
    assert main(["inspect", "--nodes", str(NATIVE), "--pods", str(pods), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["freeGpus"] < before


def test_unreadable_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "nodes.yaml"
    bad.write_text("items: [1, {")
    assert main(["inspect", "--nodes", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fabricfit inspect: ") and err.count("\n") == 1


def test_imports_neither_kopf_nor_the_kubernetes_client() -> None:
    code = (
        "import sys; from fabricfit.cli.main import main; "
        f"main(['inspect', '--nodes', {str(NATIVE)!r}]); "
        "print(sorted(m for m in ('kopf', 'kubernetes', 'aiohttp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
