"""Fixtures for end-to-end tests against a real Kubernetes API server.

The session fixture ``kubeconfig`` uses the cluster named by ``$KUBECONFIG`` when it is set (so the
same suite runs against any cluster, e.g. kind in a user's CI). Otherwise it starts a private
control plane with the project's own harness (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok) in a temporary state directory, and stops exactly that at the end.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.operator import OperatorProcess

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/tests/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    given = os.environ.get("KUBECONFIG")
    if given:
        yield Path(given)
        return
    from devcluster import binaries, cluster

    state_dir = tmp_path_factory.mktemp("cluster")
    previous = os.environ.get("FABRICFIT_STATE_DIR")
    os.environ["FABRICFIT_STATE_DIR"] = str(state_dir)
    try:
        state = cluster.up(binaries.require(), lambda msg: print(f"[cluster] {msg}"))
        yield state.kubeconfig
    finally:
        cluster.down(lambda msg: print(f"[cluster] {msg}"))
        if previous is None:
            os.environ.pop("FABRICFIT_STATE_DIR", None)
        else:
            os.environ["FABRICFIT_STATE_DIR"] = previous


@pytest.fixture(scope="session")
def api_client(kubeconfig: Path) -> Any:
    from kubernetes import config

    return config.new_client_from_config(str(kubeconfig))


@pytest.fixture(scope="session")
def core(api_client: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def kubectl(kubeconfig: Path) -> list[str]:
    """argv prefix for the real kubectl built by hack/cluster build."""
    from devcluster import binaries

    return [str(binaries.locate().kubectl), f"--kubeconfig={kubeconfig}"]


@pytest.fixture
def namespace(core: Any) -> Iterator[str]:
    """A fresh namespace whose default ServiceAccount exists (pods need it for admission)."""
    from kubernetes.client.exceptions import ApiException

    name = f"e2e-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name, "labels": {"fabricfit.dev/e2e": "true"}}})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_service_account("default", name)
            break
        except ApiException as err:
            if err.status != 404:
                raise
            time.sleep(0.2)
    yield name
    core.delete_namespace(name)


@pytest.fixture(scope="session")
def operator(
    kubeconfig: Path, kubectl: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    root = Path(__file__).resolve().parents[2]
    subprocess.run([*kubectl, "apply", "-f", str(root / "crds")], check=True, capture_output=True)
    proc = OperatorProcess(kubeconfig, tmp_path_factory.mktemp("operator"))
    proc.start()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def custom(api_client: Any) -> Any:
    from kubernetes import client

    return client.CustomObjectsApi(api_client)


@pytest.fixture(scope="session")
def batch(api_client: Any) -> Any:
    from kubernetes import client

    return client.BatchV1Api(api_client)
