"""``make demo`` end to end, reduced in size, on its own real control plane.

The demo's output is checked against the cluster it leaves running: every pod is bound to the
node its table names, the SVG is well-formed and names every job, a second run reuses the
cluster, and ``hack/cluster down`` afterwards leaves no process running (the operator included).
The job on the NVL72 racks is bound where the operator planned it, on whole trays of its own
pool, and its printed comparison is checked against the cluster: both placements priced again
here with the package's cost model (Kueue's, under the emulation, placed again with the
package's BestFit), the tensor groups each splits across NVLink domains counted by the
package's plan quality, so a reason the demo prints is one the placements bear out.
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

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.placement import request_from_spec
from fabricfit.placement.peers import kueue_bestfit
from fabricfit.placement.pricing import PricedPods, price_pods
from fabricfit.placement.slots import build_leaf_domains
from fabricfit.render.summary import format_seconds
from fabricfit_dev import kube
from fabricfit_dev.kube import Clients

ROOT = Path(__file__).resolve().parents[2]
NVL72 = "llama-13b-nvl72"
JOBS = ("llama-13b", "mixtral-8x7b", NVL72)
PODS = {"llama-13b": 4, "mixtral-8x7b": 4, NVL72: 16}
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


def summary_row(out: str, job: str) -> tuple[str, str, float]:
    """(fabricfit, Kueue TAS, ratio) as the summary table prints them for ``job``."""
    row = re.search(rf"^{job} .* (\S+ m?s) +\S+ m?s +(\S+ m?s) +([\d.]+)×$", out, re.M)
    assert row is not None, out
    return row.group(1), row.group(2), float(row.group(3))


def nvl72_cluster(
    kubeconfig: Path,
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The NVL72 job's TrainingTopology, the trays of its pool, and every pod but its own
    (the cluster the operator planned it on: it is the last job)."""
    c = Clients.connect(kubeconfig)
    tt = kube.read_topology(c.custom, "fabricfit-demo", NVL72)
    nodes, pods = kube.read_cluster(c, "fabricfit.dev/pool=demo-nvl72")
    job = "batch.kubernetes.io/job-name"
    others = [p for p in pods if (p["metadata"].get("labels") or {}).get(job) != NVL72]
    return tt, nodes, others


def check_nvl72(out: str, kubeconfig: Path, *, real_kueue: bool) -> None:
    """The NVL72 job runs where the operator planned it, one pod per tray of its pool, and
    the printed comparison is the two placements' prices (see the module doc)."""
    tt, nodes, others = nvl72_cluster(kubeconfig)
    planned = [p["node"] for p in sorted(tt["status"]["pods"], key=lambda p: p["index"])]
    printed = printed_tables(out)[NVL72]
    assert [printed[i] for i in range(16)] == planned
    assert len(set(planned)) == 16 and {n["metadata"]["name"] for n in nodes} >= set(planned)
    spec = TrainingTopologySpec.model_validate(tt["spec"])
    snapshot = build_snapshot(nodes, others, scheme="native", default_fabric=spec.fabric)
    request = request_from_spec(spec)
    profile = get_profile("gb200-nvl72")
    ours = price_pods(snapshot, request, profile, planned)
    mine, theirs, ratio = summary_row(out, NVL72)
    assert mine == format_seconds(tt["status"]["predicted"]["stepCommSeconds"])
    assert mine == format_seconds(ours.predicted.step_comm_seconds)
    assert "GPUs: every pod takes all 4 GPUs of its node" in block(out, NVL72)
    if real_kueue:  # Kueue's nodes are gone with its job: the printed figures must agree
        assert ratio == pytest.approx(seconds(theirs) / seconds(mine), abs=0.02)
        assert ("why: " in block(out, NVL72)) == (ratio > 1.005)
        return
    free = [n for n in snapshot.nodes if n.available and n.free_gpus >= 4]
    slots = kueue_bestfit(build_leaf_domains(free, 4, {}), 16, level="rack")
    assert slots is not None
    kueue = price_pods(snapshot, request, profile, [slot.node for slot in slots])
    assert theirs == format_seconds(kueue.predicted.step_comm_seconds)
    assert ratio == round(kueue.predicted.step_comm_seconds / ours.predicted.step_comm_seconds, 2)
    assert ratio > 2  # the default racks: Kueue splits a tensor group, fabricfit does not
    check_reason(block(out, NVL72), ours, kueue)


def check_reason(text: str, ours: PricedPods, kueue: PricedPods) -> None:
    split = kueue.quality.tensor_groups_crossing_nvlink
    assert ours.quality.tensor_groups_crossing_nvlink == 0 and split > 0
    verb = "spans" if split == 1 else "span"
    assert f"why: {split} of Kueue TAS's 8 tensor groups {verb} 2 NVLink domains, none of " in text


def block(out: str, job: str) -> str:
    """The demo's lines about ``job``, from its heading to the next blank line."""
    start = out.index(f"job {job}: ")
    return out[start : out.find("\n\n", start)]


def seconds(printed: str) -> float:
    value, unit = printed.split()
    return float(value) * {"s": 1.0, "ms": 1e-3}[unit]


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
    assert {job: len(rows) for job, rows in tables.items()} == PODS
    assert bound_in_cluster(kubeconfig) == tables
    assert out.count("total per step") == len(JOBS)
    # The comparison is Kueue TAS (emulated), one verdict per job: a ratio, or a tie said as one.
    verdicts = re.findall(r"Kueue TAS (?:is|ties \() ?([\d.]+)×", out)
    assert len(verdicts) == len(JOBS) and all(float(v) >= 1.0 for v in verdicts), out
    assert "Kueue is emulated" in out
    check_nvl72(out, kubeconfig, real_kueue=False)

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
        assert "0 created, 44 kept from an earlier run" in again.stdout  # 8 DGX, 36 trays
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
            assert f"{job}: Kueue TAS bound its {PODS[job]} pods; deleted again" in out
        assert out.count("Kueue TAS used: ") == len(JOBS)
        verdicts = re.findall(r"Kueue TAS (?:is|ties \() ?([\d.]+)×", out)
        assert len(verdicts) == len(JOBS), out
        kubeconfig = Path(re.findall(r"KUBECONFIG=(\S+)", out)[0])
        assert bound_in_cluster(kubeconfig) == printed_tables(out)
        check_nvl72(out, kubeconfig, real_kueue=True)
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
