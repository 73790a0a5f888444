"""``fabricfit plan`` for a served model: per-phase prediction, replicas and latency verdict in
the JSON, and ``--paired`` (the partner's recorded plan, or the partner planned first)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit.cli.main import main

NODES = Path(__file__).resolve().parents[2] / "fixtures" / "nodes" / "native-h100-16.json"
MODEL = {"hiddenSize": 8192, "layers": 80, "attentionHeads": 64, "kvHeads": 8}


def topology(name: str, role: str, data: int, **serving: Any) -> dict[str, Any]:
    return {
        "apiVersion": "fabricfit.dev/v1alpha1",
        "kind": "TrainingTopology",
        "metadata": {"name": name},
        "spec": {
            "gpusPerPod": 8,
            "parallelism": {"tensor": 8, "data": data},
            "model": MODEL,
            "serving": {"role": role, "decodeBatch": 64, "promptTokens": 4096, **serving},
        },
    }


def write(tmp_path: Path, name: str, body: dict[str, Any]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body), encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(["plan", "--nodes", str(NODES), *args])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_replicated_deployment_reports_per_token_and_prefill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = topology("serve", "replica", 4, targets={"timePerOutputTokenSeconds": 0.001})
    code, out, _ = run(capsys, "--topology", write(tmp_path, "tt", spec), "--json")
    result = json.loads(out)
    assert code == 0
    predicted = result["predicted"]
    decode, prefill = predicted["decode_token_comm_seconds"], predicted["prefill_comm_seconds"]
    assert 0 < decode < prefill and predicted["kv_transfer_seconds"] is None
    assert predicted["step_comm_seconds"] == pytest.approx(decode + prefill)
    assert predicted["by_dimension"]["data"] == 0.0  # replicas never all-reduce
    serving = result["serving"]
    assert serving["replicas"] == [[0], [1], [2], [3]] and serving["role"] == "replica"
    assert serving["latency_target"]["met"] is False
    assert serving["latency_target"]["reason"] == "CommunicationExceedsTarget"
    assert result["paired"] is None


def test_the_text_says_the_phases_and_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = topology("serve", "replica", 2, targets={"timePerOutputTokenSeconds": 1.0})
    code, out, _ = run(capsys, "--topology", write(tmp_path, "tt", spec))
    assert code == 0
    assert "serving communication: per output token (decode step)" in out
    assert "latency target (CommunicationWithinTarget)" in out


def test_the_partner_without_a_plan_is_planned_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prefill = write(tmp_path, "p", topology("pre", "prefill", 2, pairedWith="dec"))
    decode = write(tmp_path, "d", topology("dec", "decode", 2, pairedWith="pre"))
    code, out, err = run(capsys, "--topology", decode, "--paired", prefill, "--json")
    assert code == 0, err
    result = json.loads(out)
    paired = result["paired"]
    assert paired["name"] == "pre" and paired["planned_here"] is True
    partner_nodes = {p["node"] for p in paired["pods"]}
    assert partner_nodes.isdisjoint({p["node"] for p in result["pods"]})  # full nodes each
    assert result["predicted"]["kv_transfer_seconds"] > 0
    assert result["predicted"]["prefill_comm_seconds"] is None  # the decode side


def test_the_partners_recorded_plan_is_read_and_its_gpus_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = topology("pre", "prefill", 2)
    body["status"] = {
        "pods": [{"index": 0, "node": "dgx-h100-009"}, {"index": 1, "node": "dgx-h100-010"}],
        "reservation": [{"node": "dgx-h100-009", "gpus": 8}, {"node": "dgx-h100-010", "gpus": 8}],
        "gpusPerPod": 8,
    }
    decode = write(tmp_path, "d", topology("dec", "decode", 2))
    code, out, _ = run(
        capsys, "--topology", decode, "--paired", write(tmp_path, "p", body), "-o", "json"
    )
    assert code == 0
    result = json.loads(out)
    assert result["paired"]["planned_here"] is False
    nodes = {p["node"] for p in result["pods"]}
    assert not nodes & {"dgx-h100-009", "dgx-h100-010"}
    # The KV transfer stays under the partner's leaf: its rail group su2 (nodes 009-016).
    assert all(int(n.rsplit("-", 1)[1]) >= 9 for n in nodes), nodes


@pytest.mark.parametrize(
    ("spec", "partner", "message"),
    [
        (
            topology("r", "replica", 2),
            topology("p", "prefill", 2),
            "needs a spec whose serving.role",
        ),
        (
            topology("d", "decode", 2, pairedWith="other"),
            topology("p", "prefill", 2),
            "is TrainingTopology p, but serving.pairedWith names other",
        ),
        (topology("d", "decode", 2), topology("p", "decode", 2), "is decode, not the prefill side"),
    ],
)
def test_a_partner_that_does_not_fit_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    spec: dict[str, Any],
    partner: dict[str, Any],
    message: str,
) -> None:
    args = ("--topology", write(tmp_path, "s", spec), "--paired", write(tmp_path, "p", partner))
    code, _, err = run(capsys, *args)
    assert code == 2 and message in err and err.count("\n") == 1
