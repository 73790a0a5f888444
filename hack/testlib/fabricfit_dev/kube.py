"""The one Kubernetes client of the test library, and the reads and waits its users share.

Tests, the demo and the benchmarks talk to a real API server through the official client's typed
APIs. ``Clients.connect`` makes the four they use from one kubeconfig, over one connection pool.
The functions below take the one API they need (``core``, ``custom``), so a test passes its
fixture and the demo or a benchmark the matching field of its ``Clients``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from fabricfit.api.constants import GROUP, PLURAL, VERSION
from fabricfit_dev.waiting import wait_for

#: (group, version, plural) of the TrainingTopology resource, as the custom-objects API takes it.
TT: Final = (GROUP, VERSION, PLURAL)
#: The label the Job controller sets on each pod of an Indexed Job.
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"


@dataclass(frozen=True)
class Clients:
    """The typed APIs of one API server: ``api`` (the ApiClient: serialization, the pool),
    ``core`` (CoreV1Api), ``batch`` (BatchV1Api) and ``custom`` (CustomObjectsApi)."""

    api: Any
    core: Any
    batch: Any
    custom: Any

    @classmethod
    def connect(cls, kubeconfig: Path) -> Clients:
        from kubernetes import client, config

        api = config.new_client_from_config(str(kubeconfig))  # type: ignore[no-untyped-call]
        return cls(api, client.CoreV1Api(api), client.BatchV1Api(api), client.CustomObjectsApi(api))


def exists(read: Callable[[], object]) -> bool:
    """Whether ``read()`` finds its object: False when the API server answers 404 (any other
    error is raised)."""
    from kubernetes.client.exceptions import ApiException

    try:
        read()
    except ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def delete_if_present(delete: Callable[[], object]) -> None:
    """Call ``delete()``; an object that is already gone (404) is not an error."""
    exists(delete)


def wait_service_account(core: Any, namespace: str, timeout_seconds: float = 60) -> None:
    """Wait until ``namespace``'s default ServiceAccount exists: until then the API server
    refuses its pods."""
    wait_for(
        lambda: exists(lambda: core.read_namespaced_service_account("default", namespace)),
        timeout_seconds,
        0.2,
        f"the default ServiceAccount of {namespace}",
    )


def read_topology(custom: Any, namespace: str, name: str) -> dict[str, Any]:
    """The TrainingTopology ``name`` as a plain dict."""
    return dict(custom.get_namespaced_custom_object(*TT[:2], namespace, TT[2], name))


def condition(tt: dict[str, Any], type_: str) -> dict[str, Any] | None:
    """The condition of type ``type_`` in an object's status, if it has one."""
    for c in (tt.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return None


def has_condition(tt: dict[str, Any], type_: str, status: str = "True") -> bool:
    return (condition(tt, type_) or {}).get("status") == status


def job_pods(core: Any, namespace: str, job: str) -> dict[int, Any]:
    """The live (not deleting) pods of the Indexed Job ``job``, by completion index."""
    pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={job}").items
    live = [p for p in pods if p.metadata.deletion_timestamp is None]
    return {int(p.metadata.labels[INDEX_LABEL]): p for p in live}


def bound_nodes(core: Any, namespace: str, job: str, pods: int) -> list[str] | None:
    """The node of each of the ``pods`` pods of ``job`` by completion index, once kube-scheduler
    has bound every one of them (else None)."""
    nodes = {index: pod.spec.node_name for index, pod in job_pods(core, namespace, job).items()}
    if len(nodes) != pods or not all(nodes.values()):
        return None
    return [nodes[i] for i in range(pods)]


def read_cluster(
    c: Clients, node_selector: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The nodes ``node_selector`` selects and every pod of every namespace, as plain dicts (what
    ``fabricfit`` reads from ``kubectl get -o json``)."""
    nodes = c.core.list_node(label_selector=node_selector).items
    pods = c.core.list_pod_for_all_namespaces().items
    return (
        [c.api.sanitize_for_serialization(n) for n in nodes],
        [c.api.sanitize_for_serialization(p) for p in pods],
    )
