"""The control plane is real: kube-scheduler binds GPU pods to labelled kwok nodes, kwok runs
them, and a pod that fits nowhere stays Pending with a FailedScheduling event."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
FABRIC = fakenodes.FakeFabric(rail_groups_per_spine=2, nodes_per_rail_group=2, prefix="stack",
                               ids="stack")  # fmt: skip


@pytest.fixture(scope="module")
def gpu_nodes(core: Any) -> Any:
    manifests = fakenodes.node_manifests(FABRIC)
    names = fakenodes.create_nodes(core, manifests)
    fakenodes.wait_ready(core, names)
    yield manifests
    fakenodes.delete_nodes(core, names)


def gpu_pod(name: str, gpus: int, node_selector: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": node_selector,
            "containers": [
                {
                    "name": "train",
                    "image": "example.invalid/train:1",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        },
    }


def test_server_reports_a_stamped_version(kubectl: list[str]) -> None:
    out = subprocess.run(
        [*kubectl, "version", "-o", "json"], capture_output=True, text=True, check=True
    ).stdout
    assert '"gitVersion": "v1.' in out
    assert "v0.0.0" not in out


def test_crd_applies_and_is_served(kubectl: list[str]) -> None:
    subprocess.run([*kubectl, "apply", "-f", str(ROOT / "crds")], check=True, capture_output=True)
    get = [*kubectl, "get", "trainingtopologies", "-A"]
    wait_for(
        lambda: subprocess.run(get, capture_output=True, check=False).returncode == 0,
        what="the TrainingTopology CRD to be served",
    )


def test_scheduler_binds_gpu_pod_to_the_selected_node(
    core: Any, namespace: str, gpu_nodes: Any
) -> None:
    target = gpu_nodes[3]["metadata"]
    selector = {
        "topology.fabricfit.dev/rail-group": target["labels"]["topology.fabricfit.dev/rail-group"],
        "kubernetes.io/hostname": target["name"],
    }
    core.create_namespaced_pod(namespace, gpu_pod("fits", 8, selector))

    pod = wait_for(
        lambda: (p := core.read_namespaced_pod("fits", namespace)).status.phase == "Running" and p,
        what="the pod to be bound and Running",
    )
    assert pod.spec.node_name == target["name"]


def test_pod_larger_than_any_node_stays_pending(core: Any, namespace: str, gpu_nodes: Any) -> None:
    core.create_namespaced_pod(namespace, gpu_pod("too-big", 16, {"fabricfit.dev/fake": "true"}))

    def failed_scheduling() -> Any:
        events = core.list_namespaced_event(
            namespace, field_selector="involvedObject.name=too-big"
        ).items
        return [e for e in events if e.reason == "FailedScheduling"]

    events = wait_for(failed_scheduling, what="a FailedScheduling event")
    assert "nvidia.com/gpu" in events[0].message
    pod = core.read_namespaced_pod("too-big", namespace)
    assert pod.status.phase == "Pending"
    assert pod.spec.node_name is None


def test_samples_pass_the_api_servers_validation(kubectl: list[str], namespace: str) -> None:
    """Every sample in deploy/samples/ is accepted by the real API server (schema and CEL).

    A server-side dry run validates everything without creating objects that the operator of
    other tests would then plan and reserve GPUs for."""
    subprocess.run([*kubectl, "apply", "-f", str(ROOT / "crds")], check=True, capture_output=True)
    for sample in sorted((ROOT / "deploy" / "samples").glob("*.yaml")):
        result = subprocess.run(
            [*kubectl, "apply", "--dry-run=server", "-n", namespace, "-f", str(sample)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, f"{sample.name}: {result.stderr}"
        assert "trainingtopology.fabricfit.dev/" in result.stdout
