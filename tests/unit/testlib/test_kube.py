"""The test library's client helpers (``fabricfit_dev.kube``) and the operator's command line
(``fabricfit_dev.operator``), on stand-ins for the Kubernetes client's answers."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from fabricfit_dev import kube
from fabricfit_dev.operator import operator_argv


def refuse(status: int) -> Any:
    def call() -> None:
        raise ApiException(status=status)

    return call


def test_exists_is_false_only_on_404() -> None:
    assert kube.exists(lambda: {"kind": "Node"})
    assert not kube.exists(refuse(404))
    with pytest.raises(ApiException):
        kube.exists(refuse(403))
    kube.delete_if_present(refuse(404))  # already gone: fine
    with pytest.raises(ApiException):
        kube.delete_if_present(refuse(500))


def pod(index: int, node: str | None, deleting: bool = False) -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(
            labels={kube.INDEX_LABEL: str(index)}, deletion_timestamp="now" if deleting else None
        ),
        spec=SimpleNamespace(node_name=node),
    )


class Core:
    def __init__(self, pods: list[Any]) -> None:
        self.pods = pods

    def list_namespaced_pod(self, namespace: str, label_selector: str) -> Any:
        assert (namespace, label_selector) == ("ns", "job-name=train")
        return SimpleNamespace(items=self.pods)


def test_bound_nodes_by_completion_index_once_every_pod_is_bound() -> None:
    bound = [pod(1, "n7"), pod(0, "n3"), pod(0, "n9", deleting=True)]
    assert kube.bound_nodes(Core(bound), "ns", "train", 2) == ["n3", "n7"]
    assert kube.bound_nodes(Core([pod(0, "n3"), pod(1, None)]), "ns", "train", 2) is None
    assert kube.bound_nodes(Core([pod(0, "n3")]), "ns", "train", 2) is None


def test_conditions_of_a_status() -> None:
    tt = {
        "status": {"conditions": [{"type": "Placed", "status": "True", "reason": "AllPodsBound"}]}
    }
    assert kube.condition(tt, "Placed") == tt["status"]["conditions"][0]
    assert kube.condition(tt, "Planned") is None and kube.condition({}, "Placed") is None
    assert kube.has_condition(tt, "Placed") and not kube.has_condition(tt, "Placed", "False")


def test_the_operator_runs_standalone_unless_it_peers_and_extra_flags_win() -> None:
    argv = operator_argv(resync_seconds=2, liveness="http://127.0.0.1:1/healthz", extra=["-v"])
    assert argv[:5] == [sys.executable, "-m", "fabricfit", "run", "--standalone"]
    assert argv[argv.index("--metrics-port") + 1] == "0"
    assert argv[argv.index("--resync-seconds") + 1] == "2" and argv[-1] == "-v"
    peered = operator_argv(resync_seconds=10.0, extra=["--peering", "p", "--metrics-port", "9"])
    assert "--standalone" not in peered and peered[-2:] == ["--metrics-port", "9"]
    assert peered[peered.index("--resync-seconds") + 1] == "10"
