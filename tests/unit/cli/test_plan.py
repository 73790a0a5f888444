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
    ("gb200-moe", "native-gb200-2x18.yaml", None, "moe-gb200.yaml", []),
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
            "unknown --label-scheme 'bogus' (one of auto,",
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


# --- bad input of every class: exit 2, one line (issue: bad input never crashes) ------------

TT = "gpusPerPod: 8\nparallelism: {tensor: 8, data: 2}\n"
EMPTY_NODES = '{"kind": "List", "items": []}'


def _files(tmp_path: Path, nodes: str | bytes = EMPTY_NODES, tt: str | bytes = TT) -> list[str]:
    for name, body in (("nodes", nodes), ("tt", tt)):
        path = tmp_path / name
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
    return ["--nodes", str(tmp_path / "nodes"), "--topology", str(tmp_path / "tt")]


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], fragment: str) -> None:
    code, out, err = _run(capsys, *args)
    assert (code, out) == (2, ""), (code, err)
    assert err.count("\n") == 1 and "Traceback" not in err and len(err) < 400, err
    assert fragment in err, err


@pytest.mark.parametrize(
    ("nodes", "fragment"),
    [
        (
            "kind: TrainingTopology\nspec: {}\n",
            "object 1 has kind 'TrainingTopology', expected Node",
        ),
        ('{"kind": "List", "items": [{"kind": "Pod"}]}', "object 1 has kind 'Pod', expected Node"),
        ("a: !!int x\n", "'x' is not a valid !!int"),
        ("a: !!timestamp x\n", "'x' is not a valid !!timestamp"),
        ('{"items": [' + "1" * 5000 + "]}", "a number has more than 100 digits"),
        (b"kind: \xff\xfe\xfd\n", "not UTF-8 text"),
        ("l0: &a [x, x]\nl1: &b [*a, *a]\nl2: [*b, *b]\n", "object 1 has no kind"),
    ],
)
def test_every_bad_nodes_file_is_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, nodes: str | bytes, fragment: str
) -> None:
    _one_line_exit_2(capsys, _files(tmp_path, nodes=nodes), fragment)


def test_a_wrong_pods_file_is_not_ignored(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = [*_files(tmp_path), "--pods", str(NODES / "eks-p5-12.yaml")]
    _one_line_exit_2(capsys, args, "pods file")


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/null", "/"])
def test_devices_and_directories_are_refused_before_reading(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, path: str
) -> None:
    args = _files(tmp_path)
    args[1] = path
    _one_line_exit_2(capsys, args, f"cannot read nodes file {path}")


def test_a_fifo_is_refused_without_blocking(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = _files(tmp_path)
    args[1] = str(fifo)
    _one_line_exit_2(capsys, args, "not a regular file (use - to read a pipe)")


def test_oversized_files_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("fabricfit.cli.inputs.MAX_INPUT_BYTES", 1000)
    _one_line_exit_2(capsys, _files(tmp_path, nodes=" " * 1001), "larger than 1,000 bytes")


def test_stdin_is_read_with_a_dash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    args = _files(tmp_path)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(EMPTY_NODES.encode())))
    code, out, _ = _run(capsys, "--nodes", "-", "--topology", args[3])
    assert code == 1 and "no node has GPUs" in out


@pytest.mark.parametrize(
    ("tt", "fragment"),
    [
        ("gpusPerPod: 8\nparallelism: {tensor: 3}\n", "= 3 is not a multiple of gpusPerPod 8"),
        ("gpusPerPod: 8\nparallelism: {tensor: 8, data: 4096, pipeline: 8}\n", "at most 4096"),
        ("gpusPerPod: 8\nplacement: 5\n", "spec.placement: must be a mapping, got 5"),
        ("kind: TrainingTopology\nspec: 7\n", "object 1: spec is a number, not a mapping"),
        ("kind: TrainingTopology\nmetadata: [1]\nspec: {}\n", "metadata is a list, not a mapping"),
    ],
)
def test_rules_and_bounds_of_the_crd_apply_before_planning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, tt: str, fragment: str
) -> None:
    _one_line_exit_2(capsys, _files(tmp_path, tt=tt), fragment)


WORKLOAD_TT = (
    "kind: TrainingTopology\n"
    "spec: {gpusPerPod: 8, parallelism: {tensor: 8}, workloadRef: {apiVersion: %s, kind: %s,"
    " name: j}}\n---\n"
)


@pytest.mark.parametrize(
    ("kind", "workload", "fragment"),
    [
        ("Job", "kind: Job\nmetadata: 5\n", "object 2: metadata is a number, not a mapping"),
        ("Job", "kind: Job\nmetadata: {name: j}\nspec: 5\n", "object 2: spec is a number"),
        (
            "Job",
            "kind: Job\nmetadata: {name: j}\nspec: {template: {spec: 7}}\n",
            "spec is a number",
        ),
        (
            "JobSet",
            "kind: JobSet\nmetadata: {name: j}\nspec: {replicatedJobs: 7}\n",
            "no pod template",
        ),
    ],
)
def test_malformed_workloads_are_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, kind: str, workload: str, fragment: str
) -> None:
    version = {"Job": "batch/v1", "JobSet": "jobset.x-k8s.io/v1alpha2"}[kind]
    tt = WORKLOAD_TT % (version, kind) + workload
    _one_line_exit_2(capsys, _files(tmp_path, tt=tt), fragment)


def test_nodes_without_gpus_get_a_gpu_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    node = {"kind": "Node", "metadata": {"name": "cpu-0"}, "status": {"allocatable": {"cpu": "8"}}}
    code, out, _ = _run(capsys, *_files(tmp_path, nodes=json.dumps({"items": [node]})))
    assert code == 1
    assert "no node has GPUs" in out and "NVLink" not in out


def test_unencodable_node_names_survive_the_summary_and_the_svg(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    items = [
        {
            "kind": "Node",
            "metadata": {"name": f"n\\ud800{i}"},
            "status": {**ready, "allocatable": {"nvidia.com/gpu": "8"}},
        }
        for i in range(2)
    ]
    nodes = json.dumps({"items": items}).replace("\\\\ud800", "\\ud800")
    svg = tmp_path / "plan.svg"
    code, out, err = _run(capsys, *_files(tmp_path, nodes=nodes), "--svg", str(svg))
    assert code == 0, err
    assert svg.stat().st_size > 0 and "PLACED" in out


def _fabric_nodes(*fabrics: str) -> str:
    ready = {"conditions": [{"type": "Ready", "status": "True"}]}
    items = [
        {
            "kind": "Node",
            "metadata": {"name": f"g{i}", "labels": {"topology.fabricfit.dev/fabric": f}},
            "status": {**ready, "allocatable": {"nvidia.com/gpu": "8"}},
        }
        for i, f in enumerate(fabrics)
    ]
    return json.dumps({"kind": "List", "items": items})


def test_one_unknown_fabric_label_names_the_node_and_the_label(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Skipped with a note, or refused: either way the node and the label are named."""
    args = _files(tmp_path, nodes=_fabric_nodes("dgx-h100", "dgx-h100", "dgx-h1OO"))
    code, out, err = _run(capsys, *args)
    assert code in (0, 2), err
    said = out if code == 0 else err
    assert "g2" in said and "topology.fabricfit.dev/fabric" in said and "dgx-h1OO" in said


def test_only_unknown_fabric_labels_name_the_node_and_the_label(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = _files(tmp_path, nodes=_fabric_nodes("dgx-h1OO", "dgx-h1OO"))
    _one_line_exit_2(capsys, args, "node g0: label topology.fabricfit.dev/fabric='dgx-h1OO'")


def test_a_plan_spanning_gb200_trays_says_it_needs_a_compute_domain(
    capsys: pytest.CaptureFixture[str],
) -> None:
    nodes, topology = str(NODES / "native-gb200-2x18.yaml"), str(PLAN / "moe-gb200.yaml")
    code, out, _ = _run(capsys, "--nodes", nodes, "--topology", topology, "--json")
    assert code == 0
    needed = json.loads(out)["compute_domain"]
    assert needed["needed"] and needed["num_nodes"] == 24 and needed["groups"]["expert"] == 24
    assert len(needed["nvlink_domains"]) == 2 and needed["shared_nodes"] == []
    code, out, _ = _run(capsys, "--nodes", nodes, "--topology", topology)
    assert "ComputeDomain: needed, 24 expert groups" in out and "numNodes 24" in out
    code, out, _ = _run(capsys, "--nodes", str(NODES / "native-h100-16.json"),
                        "--topology", str(PLAN / "dense-native.yaml"))  # fmt: skip
    assert "ComputeDomain" not in out


def test_a_plan_where_no_tier_is_detected_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """GKE-labelled nodes read with the native scheme look flat: no silent 100%."""
    gke = [
        "--nodes",
        str(NODES / "gke-a3ultra-12.json"),
        "--topology",
        str(PLAN / "bare-spec.yaml"),
    ]
    code, out, _ = _run(capsys, *gke, "--label-scheme", "native", "--json")
    flat = json.loads(out)
    assert code == 0 and flat["feasible"]
    assert flat["topologyDetected"] is False and flat["efficiency"] is None
    assert (
        "label scheme native finds no topology tier on any of the 12 nodes"
        in (flat["topologyMessage"])
    )
    code, out, _ = _run(capsys, *gke, "--label-scheme", "native")
    assert code == 0
    assert "warning: label scheme native finds no topology tier" in out
    assert "efficiency unknown (no topology tier)" in out and "100.0%" not in out
    code, out, _ = _run(capsys, *gke, "--json")  # auto finds GKE's tiers
    found = json.loads(out)
    assert found["topologyDetected"] is True and found["efficiency"] is not None
    assert found["topologyMessage"].startswith("label scheme gke: ")
    code, out, _ = _run(capsys, *gke)
    assert "warning:" not in out and "efficiency unknown" not in out
