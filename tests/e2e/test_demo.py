"""``make demo`` end to end, reduced in size, on its own real control plane.

The demo's output is checked against the cluster it leaves running: every pod is bound to the
node its table names, the SVG is well-formed and names every job, a second run reuses the
cluster, and ``hack/cluster down`` afterwards leaves no process running (the operator included).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from fabricfit_dev.kube import Clients

ROOT = Path(__file__).resolve().parents[2]
JOBS = ("llama-13b", "mixtral-8x7b")
SMALL = {
    "FABRICFIT_DEMO_SPINES": "1",
    "FABRICFIT_DEMO_RAIL_GROUPS": "2",
    "FABRICFIT_DEMO_NODES": "4",
    "FABRICFIT_DEMO_TENANT_SHARE": "0.1",
    "FABRICFIT_DEMO_JOBS": "small",
}


def demo_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FABRICFIT_DEMO_")}
    env.pop("KUBECONFIG", None)
    env.update(FABRICFIT_STATE_DIR=str(tmp_path / "state"), **extra)
    return env


def run_demo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fabricfit_dev.demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def printed_tables(out: str) -> dict[str, dict[int, str]]:
    """job name -> {pod index: node} as the demo's tables print them."""
    tables: dict[str, dict[int, str]] = {}
    job = None
    for line in out.splitlines():
        if header := re.match(r"job (\S+): ", line):
            job = header.group(1)
            tables[job] = {}
        elif job and (row := re.match(r"\s+pod\s+(\d+) -> (\S+)", line)):
            tables[job][int(row.group(1))] = row.group(2)
    return tables


def bound_in_cluster(kubeconfig: Path) -> dict[str, dict[int, str]]:
    core = Clients.connect(kubeconfig).core
    bound: dict[str, dict[int, str]] = {}
    for pod in core.list_namespaced_pod("fabricfit-demo").items:
        labels = pod.metadata.labels
        index = int(labels["batch.kubernetes.io/job-completion-index"])
        bound.setdefault(labels["batch.kubernetes.io/job-name"], {})[index] = pod.spec.node_name
    return bound


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def check_run(result: subprocess.CompletedProcess[str], tmp_path: Path) -> dict[str, Any]:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    for step in range(1, 10):
        assert f"==> [{step}/9]" in out
    kubeconfig = Path(re.findall(r"KUBECONFIG=(\S+)", out)[0])
    assert kubeconfig == tmp_path / "state" / "admin.kubeconfig"

    tables = printed_tables(out)
    assert sorted(tables) == sorted(JOBS)
    assert {job: len(rows) for job, rows in tables.items()} == {"llama-13b": 4, "mixtral-8x7b": 4}
    assert bound_in_cluster(kubeconfig) == tables
    assert out.count("total per step") == len(JOBS)
    # The comparison is Kueue TAS (emulated), one verdict per job: a ratio, or a tie said as one.
    verdicts = re.findall(r"Kueue TAS (?:is|ties \() ?([\d.]+)×", out)
    assert len(verdicts) == len(JOBS) and all(float(v) >= 1.0 for v in verdicts), out
    assert "Kueue is emulated" in out

    svg_path = Path(re.findall(r"SVG of every job's placement: (\S+)", out)[0])
    assert svg_path == tmp_path / "placement.svg"
    root = ET.parse(svg_path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    titles = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title"))
    for job in JOBS:
        assert job in titles
    return {"tables": tables, "kubeconfig": kubeconfig}


def test_demo_prints_what_the_cluster_shows_and_down_stops_everything(tmp_path: Path) -> None:
    from fabricfit_dev.cluster import binaries

    if binaries.locate().missing():
        if os.environ.get("CI"):
            pytest.fail("CI must build the control-plane binaries before running tests")
        pytest.skip("control-plane binaries not built (make cluster-build)")
    env = demo_env(tmp_path, **SMALL, FABRICFIT_DEMO_SVG=str(tmp_path / "placement.svg"))
    state_file = tmp_path / "state" / "state.json"
    pids: list[int] = []
    try:
        first = check_run(run_demo(env), tmp_path)
        state = json.loads(state_file.read_text())
        operator = [p for p in state["attached"] if p["name"] == "fabricfit-operator"]
        assert len(operator) == 1 and alive(operator[0]["pid"])

        again = run_demo(env)
        second = check_run(again, tmp_path)
        assert "reusing it" in again.stdout
        assert "0 created, 8 kept from an earlier run" in again.stdout
        assert second["tables"] == first["tables"]  # same seed, same cluster, same plan
        assert not alive(operator[0]["pid"])  # the first run's operator was replaced
        state = json.loads(state_file.read_text())
        pids = [p["pid"] for p in state["processes"] + state["attached"]]
        assert len(pids) == 6 and all(alive(pid) for pid in pids)
    finally:
        down = subprocess.run(
            [str(ROOT / "hack" / "cluster"), "down"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert down.returncode == 0, down.stderr
    assert "stopping fabricfit-operator" in down.stderr
    assert not (tmp_path / "state").exists()
    assert [pid for pid in pids if alive(pid)] == []


def test_demo_compares_with_the_real_kueue_when_asked(tmp_path: Path) -> None:
    """FABRICFIT_DEMO_PEER=kueue: the demo starts Kueue with its own control plane, Kueue TAS
    places each job first (then it is deleted), fabricfit places it, and the table compares
    the two placements the cluster actually made."""

    env = demo_env(tmp_path, **SMALL, FABRICFIT_DEMO_PEER="kueue",
                   FABRICFIT_DEMO_SVG=str(tmp_path / "placement.svg"))  # fmt: skip
    try:
        result = run_demo(env)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        out = result.stdout
        assert "Kueue is real" in out and "Kueue is emulated" not in out
        for job in JOBS:
            assert f"{job}: Kueue TAS bound its 4 pods; deleted again" in out
        assert out.count("Kueue TAS used: ") == len(JOBS)
        verdicts = re.findall(r"Kueue TAS (?:is|ties \() ?([\d.]+)×", out)
        assert len(verdicts) == len(JOBS), out
        kubeconfig = Path(re.findall(r"KUBECONFIG=(\S+)", out)[0])
        assert bound_in_cluster(kubeconfig) == printed_tables(out)
        core = Clients.connect(kubeconfig).core
        assert core.list_namespaced_pod("fabricfit-demo-kueue").items == []  # Kueue's runs gone
        state = json.loads((tmp_path / "state" / "state.json").read_text())
        assert "kueue" in [c["name"] for c in state["controllers"]]
    finally:
        subprocess.run([str(ROOT / "hack" / "cluster"), "down"], env=env, capture_output=True,
                       timeout=120, check=False)  # fmt: skip


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("FABRICFIT_DEMO_PEER", "volcano", "FABRICFIT_DEMO_PEER must be one of auto, kueue"),
        ("FABRICFIT_DEMO_SCHEME", "azure", "FABRICFIT_DEMO_SCHEME must be one of native"),
        ("FABRICFIT_DEMO_NODES", "0", "FABRICFIT_DEMO_NODES must be between 1 and 256, got 0"),
        ("FABRICFIT_DEMO_TENANT_SHARE", "half", "must be a number between 0 and 0.9"),
        ("FABRICFIT_DEMO_FABRIC", "tpu-v4", "FABRICFIT_DEMO_FABRIC must be one of dgx-a100"),
        ("FABRICFIT_DEMO_TENANT_SHARE", "0.9", "nodes' worth of GPUs but only"),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    tmp_path: Path, variable: str, value: str, message: str
) -> None:
    result = run_demo(demo_env(tmp_path, **{variable: value}))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert not (tmp_path / "state").exists()  # nothing started


def test_tenants_are_seeded_and_take_their_share() -> None:
    from fabricfit_dev.demo import workloads

    nodes = [f"n{i:02d}" for i in range(64)]
    first = workloads.plan_tenants(nodes, 0.3, seed=7)
    assert first == workloads.plan_tenants(nodes, 0.3, seed=7)
    assert first != workloads.plan_tenants(nodes, 0.3, seed=8)
    assert sum(p.gpus for p in first) == round(0.3 * 64 * 8)
    per_node: dict[str, int] = {}
    for pod in first:
        per_node[pod.node] = per_node.get(pod.node, 0) + pod.gpus
    assert max(per_node.values()) <= 8
    assert any(v == 8 for v in per_node.values()) and any(v < 8 for v in per_node.values())
    assert workloads.plan_tenants(nodes, 0.0, seed=7) == []
