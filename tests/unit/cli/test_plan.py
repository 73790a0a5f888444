"""``fabricfit plan``: golden JSON on the node fixtures, views, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fabricfit.cli.main import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NODES = FIXTURES / "nodes"
PLAN = FIXTURES / "plan"
GOLDEN = PLAN / "golden"
UPDATE = os.environ.get("FABRICFIT_UPDATE_GOLDEN") == "1"

GOLDEN_CASES = [
    ("native-dense", "native-h100-16.json", "native-h100-16-pods.json", "dense-native.yaml", []),
    ("topograph-bare", "topograph-v1-h200-16.yaml", None, "bare-spec.yaml", []),
    ("gke-dense", "gke-a3ultra-12.json", None, "dense-native.yaml", ["--fabric", "dgx-h200"]),
    ("eks-moe", "eks-p5-12.yaml", None, "moe-eks.yaml", []),
    ("topograph-affinity", "topograph-v1-h200-16.yaml", None, "with-job.yaml", []),
    ("native-too-big", "native-h100-16.json", None, "too-big.yaml", []),
]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(["plan", *args])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("name", "nodes", "pods", "topology", "extra"), GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES]
)
def test_golden_json(
    capsys: pytest.CaptureFixture[str],
    name: str,
    nodes: str,
    pods: str | None,
    topology: str,
    extra: list[str],
) -> None:
    args = ["--nodes", str(NODES / nodes), "--topology", str(PLAN / topology), "--json", *extra]
    if pods:
        args += ["--pods", str(NODES / pods)]
    code, out, err = _run(capsys, *args)
    result = json.loads(out)
    golden = GOLDEN / f"{name}.json"
    if UPDATE:
        golden.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    assert result == json.loads(golden.read_text(encoding="utf-8"))
    assert code == (0 if result["feasible"] else 1), err
    for key in (
        "feasible",
        "assignments",
        "pods",
        "groups",
        "predicted",
        "lower_bound_seconds",
        "reasons",
    ):
        assert key in result


def test_native_plan_avoids_full_and_unavailable_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--nodes",
        str(NODES / "native-h100-16.json"),
        "--pods",
        str(NODES / "native-h100-16-pods.json"),
        "--topology",
        str(PLAN / "dense-native.yaml"),
        "--json",
    )
    result = json.loads(out)
    assert code == 0
    used = {p["node"] for p in result["pods"]}
    assert not used & {
        "dgx-h100-001",
        "dgx-h100-002",
        "dgx-h100-003",
        "dgx-h100-009",
        "dgx-h100-015",
        "dgx-h100-016",
    }
    assert sorted(r["rank"] for r in result["assignments"]) == list(range(48))
    assert set(result["groups"]) == {"tensor", "data", "pipeline", "expert", "context"}
    assert set(result["predicted"]) == {"step_comm_seconds", "by_dimension"}
    assert 0 < result["lower_bound_seconds"] <= result["predicted"]["step_comm_seconds"]


def test_affinity_from_the_named_job_is_honoured(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--nodes",
        str(NODES / "topograph-v1-h200-16.yaml"),
        "--topology",
        str(PLAN / "with-job.yaml"),
        "--json",
    )
    assert code == 0
    nodes = {p["node"] for p in json.loads(out)["pods"]}
    assert nodes and all(int(n.split("-")[1]) >= 8 for n in nodes)


PYTORCH_WITH_AFFINITY = """
apiVersion: fabricfit.dev/v1alpha1
kind: TrainingTopology
metadata: {name: pt}
spec:
  workloadRef: {apiVersion: kubeflow.org/v1, kind: PyTorchJob, name: pt}
  gpusPerPod: 8
  parallelism: {tensor: 8, data: 2}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: t, image: t}]}}
    Worker:
      replicas: 1
      template:
        spec:
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - key: kubernetes.io/hostname
                    operator: NotIn
                    values: [h200-00, h200-01, h200-02, h200-03, h200-04, h200-05, h200-06]
          containers: [{name: t, image: t}]
"""


def test_the_workers_template_constrains_the_plan_as_in_the_operator(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The operator honours the rank-carrying template of every kind (a PyTorchJob's Worker);
    # the CLI used to read only Job and JobSet templates and planned a PyTorchJob unconstrained.
    topology = tmp_path / "pt.yaml"
    topology.write_text(PYTORCH_WITH_AFFINITY)
    nodes_file = str(NODES / "topograph-v1-h200-16.yaml")
    code, out, _ = _run(capsys, "--nodes", nodes_file, "--topology", str(topology), "--json")
    assert code == 0
    nodes = {p["node"] for p in json.loads(out)["pods"]}
    assert nodes and all(int(n.split("-")[1]) >= 7 for n in nodes)


def test_infeasible_reports_largest_fit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--nodes",
        str(NODES / "native-h100-16.json"),
        "--topology",
        str(PLAN / "too-big.yaml"),
    )
    assert code == 1
    assert out.startswith("fabricfit plan: INFEASIBLE")
    assert "largest job of this shape that fits now: 96 GPUs (12 pods, data parallelism 3)" in out


def test_human_summary_and_svg(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    svg = tmp_path / "plan.svg"
    code, out, _ = _run(
        capsys,
        "--nodes",
        str(NODES / "topograph-v1-h200-16.yaml"),
        "--topology",
        str(PLAN / "bare-spec.yaml"),
        "--svg",
        str(svg),
    )
    assert code == 0
    assert out.startswith("fabricfit plan: PLACED\n")
    assert "predicted step communication" in out and "pods:" in out
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (
            ["--nodes", "missing.yaml", "--topology", "tt.yaml"],
            "cannot read nodes file missing.yaml",
        ),
        (["--nodes", str(NODES), "--topology", "tt.yaml"], "cannot read nodes file"),
        (
            ["--nodes", str(NODES / "eks-p5-12.yaml"), "--topology", str(PLAN / "invalid.yaml")],
            "spec.parallelism.tensor",
        ),
        (
            [
                "--nodes",
                str(NODES / "eks-p5-12.yaml"),
                "--topology",
                str(PLAN / "dense-native.yaml"),
                "--fabric",
                "no-such-fabric",
            ],
            "no-such-fabric",
        ),
        (
            ["--nodes", str(NODES / "eks-p5-12.yaml"), "--topology", str(NODES / "eks-p5-12.yaml")],
            "expected one TrainingTopology, found 0",
        ),
        (["--nodes", str(NODES / "eks-p5-12.yaml")], "--topology"),
        (
            [
                "--nodes",
                str(NODES / "eks-p5-12.yaml"),
                "--topology",
                str(PLAN / "bare-spec.yaml"),
                "--label-scheme",
                "bogus",
            ],
            "invalid choice",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], fragment: str
) -> None:
    code, out, err = _run(capsys, *args)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert fragment in err


def test_bad_yaml_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "nodes.yaml"
    bad.write_text("items: [\n  - {", encoding="utf-8")
    code, _, err = _run(capsys, "--nodes", str(bad), "--topology", str(PLAN / "bare-spec.yaml"))
    assert code == 2 and err.count("\n") == 1 and "nodes file" in err
