"""``fabricfit plan`` decides exactly what the operator decides, on the same inputs.

Hypothesis draws a cluster (nodes, some GPUs already held by pods, fabric labels absent, mixed
or misspelt), a TrainingTopology spec —
valid, breaking a CRD rule, or naming a workload whose template constrains nodes — and the
workload itself. The CLI path runs ``fabricfit plan --json`` on files holding them; the operator
path runs one real reconcile (``reconcile.service.reconcile``) against an in-memory API that
serves the same workload and records the status written. Both must agree: invalid (exit 2) ⇔
``Planned=False, InvalidSpec`` with the same message; does not fit (exit 1) ⇔
``InsufficientGPUs`` with the same reasons; placed (exit 0) ⇔ ``Planned=True`` on the same
nodes, pod by pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.cli.main import main
from fabricfit.reconcile.context import OperatorConfig, OperatorState, Views
from fabricfit.reconcile.service import reconcile

NAMESPACE, NAME, JOB = "team", "tt", "train"
TRIED: Counter[str] = Counter()


class MemoryApi:
    """The few API calls one reconcile makes, served from memory (no cluster, no HTTP)."""

    def __init__(self, workload: dict[str, Any] | None) -> None:
        self.workload = workload
        self.status: dict[str, Any] = {}
        self.version = 1

    async def get(self, path: str) -> dict[str, Any] | None:
        if self.workload is not None and path.endswith(f"/jobs/{JOB}"):
            return json.loads(json.dumps(self.workload))
        return None

    async def list(self, path: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        return []

    async def patch(self, path: str, body: Any, kind: str = "merge") -> dict[str, Any]:
        if path.endswith("/status"):
            self.status.update(body["status"])
            self.version += 1
            meta = {"name": NAME, "namespace": NAMESPACE, "resourceVersion": str(self.version)}
            return {"metadata": meta, "status": json.loads(json.dumps(self.status))}
        return {}


def node(index: int, gpus: int, rail_group: int, fabric: str | None) -> dict[str, Any]:
    labels = {
        "topology.fabricfit.dev/rail-group": f"rg-{rail_group}",
        "topology.fabricfit.dev/spine": "spine-0",
        "pool": "a" if index % 3 else "b",
    }
    if fabric:
        labels["topology.fabricfit.dev/fabric"] = fabric
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{index:02d}", "labels": labels},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(index: int, node_name: str, gpus: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"busy-{index}", "namespace": "other"},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
        },
        "status": {"phase": "Running"},
    }


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Any], list[Any], dict[str, Any], dict[str, Any] | None]:
    count = draw(st.integers(0, 10))
    # Fabric labels as clusters carry them: none, one preset, a mix, a typo on some nodes.
    labels = draw(
        st.sampled_from(
            [
                [None],
                ["dgx-h100"],
                ["dgx-a100"],
                ["dgx-a100", None],
                ["dgx-h100", "dgx-a1OO"],
                ["no-such"],
            ]
        )
    )
    nodes = [
        node(i, draw(st.sampled_from([0, 4, 8, 8])), i // 4, draw(st.sampled_from(labels)))
        for i in range(count)
    ]
    busy = [
        pod(i, n["metadata"]["name"], draw(st.sampled_from([4, 8])))
        for i, n in enumerate(nodes)
        if draw(st.integers(0, 4)) == 0
    ]
    gpus_per_pod = draw(st.sampled_from([4, 8]))
    parallelism = {
        "tensor": draw(st.sampled_from([2, 4, 8, 8, 16, 3])),
        "data": draw(st.integers(1, 6)),
        "pipeline": draw(st.sampled_from([1, 1, 2])),
    }
    spec: dict[str, Any] = {
        "workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": JOB},
        "gpusPerPod": gpus_per_pod,
        "parallelism": parallelism,
        "rankOrder": draw(st.sampled_from(["tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp", "pp-tp-cp-ep-dp"])),
        "placement": {
            "mode": "advisory",
            "tensor": draw(st.sampled_from(["Required", "Preferred"])),
            "data": draw(st.sampled_from(["Required", "Preferred"])),
        },
    }
    if draw(st.booleans()):
        spec["fabric"] = draw(st.sampled_from(["dgx-h100", "dgx-b200", "no-such-fabric"]))
    if draw(st.integers(0, 5)) == 0:
        spec["gpusPerPod"] = draw(st.sampled_from([0, 65, "x", None]))
    world = parallelism["tensor"] * parallelism["data"] * parallelism["pipeline"]
    workload = None
    if draw(st.booleans()):
        pods = max(1, world // gpus_per_pod) if draw(st.integers(0, 3)) else 7
        template: dict[str, Any] = {"spec": {"containers": [{"name": "train"}]}}
        if draw(st.booleans()):
            template["spec"]["nodeSelector"] = {"pool": "a"}
        job_spec = {"completionMode": "Indexed", "completions": pods, "template": template}
        workload = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": JOB},
                    "spec": job_spec}  # fmt: skip
    return nodes, busy, spec, workload


def run_cli(tmp: Path, nodes: list[Any], busy: list[Any], tt: dict[str, Any],
            workload: dict[str, Any] | None) -> tuple[int, str, str]:  # fmt: skip
    (tmp / "nodes.json").write_text(json.dumps({"kind": "List", "items": nodes}))
    (tmp / "pods.json").write_text(json.dumps({"kind": "List", "items": busy}))
    docs = [tt, workload] if workload is not None else [tt]
    (tmp / "tt.json").write_text(json.dumps(docs))
    argv = ["plan", "--nodes", str(tmp / "nodes.json"), "--pods", str(tmp / "pods.json")]
    argv += ["--topology", str(tmp / "tt.json"), "--json"]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def run_operator(nodes: list[Any], busy: list[Any], tt: dict[str, Any],
                 workload: dict[str, Any] | None) -> dict[str, Any]:  # fmt: skip
    api = MemoryApi(workload)
    state = OperatorState(config=OperatorConfig(), rest=api)  # type: ignore[arg-type]
    views = Views(nodes=nodes, pods=busy, topologies={})
    asyncio.run(reconcile(tt, state, lambda: views))
    return api.status


def planned(status: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in status.get("conditions", []) if c["type"] == "Planned")


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(case=cases())
def test_plan_and_the_operator_make_the_same_decision(
    case: tuple[list[Any], list[Any], dict[str, Any], dict[str, Any] | None], tmp_path: Path
) -> None:
    nodes, busy, spec, workload = case
    tt = {"apiVersion": "fabricfit.dev/v1alpha1", "kind": "TrainingTopology",
          "metadata": {"name": NAME, "namespace": NAMESPACE, "generation": 1,
                       "resourceVersion": "1"}, "spec": spec}  # fmt: skip
    code, out, err = run_cli(tmp_path, nodes, busy, tt, workload)
    TRIED[f"exit {code}"] += 1
    status = run_operator(nodes, busy, tt, workload)
    condition = planned(status)
    if code == 2:
        assert condition["reason"] in ("InvalidSpec", "InvalidFabric"), (err, condition)
        assert err.strip().endswith(condition["message"]), (err, condition["message"])
        return
    result = json.loads(out)
    if code == 1:
        assert condition["reason"] == "InsufficientGPUs", (result["reasons"], condition)
        assert status["reasons"] == result["reasons"]
        return
    assert code == 0 and condition["status"] == "True", (code, err, condition)
    assert [p["node"] for p in status["pods"]] == [p["node"] for p in result["pods"]]
    assert status["lowerBoundSeconds"] == result["lower_bound_seconds"]


def test_report_cases_tried() -> None:
    print(f"\n[same-decision] inputs run through both paths: {dict(TRIED)}")
    if TRIED:  # alone (-k), nothing ran before it
        assert all(TRIED[f"exit {code}"] for code in (0, 1, 2)), "every outcome is exercised"
