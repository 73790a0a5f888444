"""Fixtures for end-to-end tests against a real Kubernetes API server.

The session fixture ``kubeconfig`` uses the cluster named by ``$KUBECONFIG`` when it is set (so the
same suite runs against any cluster, e.g. kind in a user's CI). Otherwise it starts a private
control plane with the project's own harness (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok) in a temporary state directory, and stops exactly that at the end.

Tests that need real Kueue, JobSet or LeaderWorkerSet controllers opt in with the marker
``@pytest.mark.controllers("kueue", "jobset", "lws")`` (any subset): the first such test starts
them on the session's private control plane (``hack/cluster up --with`` does the same), and
they keep running for the rest of the session. Against a ``$KUBECONFIG`` cluster the marker only
checks that their CRDs are installed, and skips the test if not.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabricfit_dev import paths
from fabricfit_dev.kube import Clients, wait_service_account
from fabricfit_dev.operator import OperatorProcess

#: One CRD per optional controller, to tell whether a given cluster runs it.
CONTROLLER_CRDS = {
    "kueue": "workloads.kueue.x-k8s.io",
    "jobset": "jobsets.jobset.x-k8s.io",
    "lws": "leaderworkersets.leaderworkerset.x-k8s.io",
    "trainer": "trainjobs.trainer.kubeflow.org",
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "controllers(*names): run these optional controllers (kueue, jobset, lws, trainer) "
        "in the e2e control plane",
    )


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
    from fabricfit_dev.cluster import binaries, controlplane

    state_dir = tmp_path_factory.mktemp("cluster")
    previous = os.environ.get("FABRICFIT_STATE_DIR")
    os.environ["FABRICFIT_STATE_DIR"] = str(state_dir)
    try:
        state = controlplane.up(binaries.require(), lambda msg: print(f"[cluster] {msg}"))
        yield state.kubeconfig
    finally:
        controlplane.down(lambda msg: print(f"[cluster] {msg}"))
        if previous is None:
            os.environ.pop("FABRICFIT_STATE_DIR", None)
        else:
            os.environ["FABRICFIT_STATE_DIR"] = previous


@pytest.fixture(autouse=True)
def optional_controllers(request: pytest.FixtureRequest) -> None:
    """Start (once per session) the controllers a test's ``controllers`` marker names."""
    marker = request.node.get_closest_marker("controllers")
    if marker is None:
        return
    from fabricfit_dev.cluster import binaries, controllers, controlplane, install

    names = controllers.parse_with(",".join(marker.args))
    kubeconfig: Path = request.getfixturevalue("kubeconfig")
    if os.environ.get("KUBECONFIG"):
        missing = [n for n in names if not _has_crd(kubeconfig, CONTROLLER_CRDS[n])]
        if missing:
            pytest.skip(f"the $KUBECONFIG cluster does not run {', '.join(missing)}")
        return
    state = controlplane.require_state()
    install.start_controllers(state, names, binaries.require(), lambda m: print(f"[cluster] {m}"))


def _has_crd(kubeconfig: Path, crd: str) -> bool:
    from fabricfit_dev.cluster import binaries

    argv = [str(binaries.locate().kubectl), f"--kubeconfig={kubeconfig}", "get", f"crd/{crd}"]
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="session")
def clients(kubeconfig: Path) -> Clients:
    return Clients.connect(kubeconfig)


@pytest.fixture(scope="session")
def api_client(clients: Clients) -> Any:
    return clients.api


@pytest.fixture(scope="session")
def core(clients: Clients) -> Any:
    return clients.core


@pytest.fixture(scope="session")
def kubectl(kubeconfig: Path) -> list[str]:
    """argv prefix for the real kubectl built by hack/cluster build."""
    from fabricfit_dev.cluster import binaries

    return [str(binaries.locate().kubectl), f"--kubeconfig={kubeconfig}"]


@pytest.fixture
def namespace(core: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace whose default ServiceAccount exists (pods need it for admission).

    Unless the test asks for Kueue (``controllers("kueue", ...)``), Kueue is told to leave it
    alone, so tests that play Kueue's part by hand behave the same whether Kueue runs or not.
    """
    from fabricfit_dev.cluster.controllers import KUEUE_IGNORE_LABEL, KUEUE_IGNORE_VALUE

    name = f"e2e-{uuid.uuid4().hex[:8]}"
    labels = {"fabricfit.dev/e2e": "true"}
    marker = request.node.get_closest_marker("controllers")
    if marker is None or "kueue" not in marker.args:
        labels[KUEUE_IGNORE_LABEL] = KUEUE_IGNORE_VALUE
    core.create_namespace({"metadata": {"name": name, "labels": labels}})
    wait_service_account(core, name)
    yield name
    core.delete_namespace(name)


@pytest.fixture(scope="session")
def operator(
    kubeconfig: Path, kubectl: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    subprocess.run([*kubectl, "apply", "-f", str(paths.CRDS)], check=True, capture_output=True)
    proc = OperatorProcess(kubeconfig, tmp_path_factory.mktemp("operator"))
    proc.start()
    yield proc
    proc.stop()


#: The line ``fabricfit run`` logs when Kueue's API was served at its start (cli/run.py).
KUEUE_ON = b"Kueue API served:"


@pytest.fixture
def kueue_operator(operator: OperatorProcess, optional_controllers: None) -> OperatorProcess:
    """The shared operator, with its Kueue AdmissionCheck handlers on.

    ``fabricfit run`` registers them only when Kueue's API is served at its start, and the
    session's operator may have started before the first ``controllers("kueue")`` test started
    Kueue: then it is restarted once (its state lives in the cluster), and stays so."""
    if KUEUE_ON not in operator.log_path.read_bytes():
        operator.restart()
    assert KUEUE_ON in operator.log_path.read_bytes(), "Kueue's API is not served"
    return operator


@pytest.fixture(scope="session")
def custom(clients: Clients) -> Any:
    return clients.custom


@pytest.fixture(scope="session")
def batch(clients: Clients) -> Any:
    return clients.batch
