"""Every bound pod kopf does not watch, for the snapshot's GPU accounting.

GPUs are a cluster-wide resource. kopf watches only the pods labelled as a TrainingTopology's
(a server-side label selector: the handlers act on no other pod, and kopf's per-object machinery
does not scale to every pod of a large cluster, see ``kube.mirror``), and in namespaced mode
only those of the listed namespaces. ``ClusterPods`` keeps a read-only, slimmed copy of every
other *bound* pod in the cluster (a ``Mirror`` of ``/api/v1/pods`` with
``spec.nodeName!=``), so no busy GPU is missed. The operator refuses to start namespaced when it
may not list pods cluster-wide (``require_cluster_pods``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricfit.api.constants import TOPOLOGY_LABEL
from fabricfit.kube.discovery import may_list
from fabricfit.kube.mirror import Key, Mirror, Source
from fabricfit.kube.rest import Rest
from fabricfit.reconcile.inventory import slim_pod

PODS = ("v1", "pods")
BOUND = {"fieldSelector": "spec.nodeName!="}


class ClusterPodsForbiddenError(Exception):
    """Namespaced mode without read access to pods in every namespace."""


async def require_cluster_pods(rest: Rest, namespaces: tuple[str, ...]) -> None:
    """Fail with a clear message unless pods can be listed in every namespace."""
    if not await may_list(rest, *PODS):
        raise ClusterPodsForbiddenError(
            f"namespaced mode ({', '.join(namespaces)}) must list and watch pods in every "
            "namespace (read-only) to count the GPUs other namespaces' pods hold; without "
            "it plans would double-book them. Grant list and watch on pods cluster-wide "
            "(the Helm chart does) or run with --all-namespaces."
        )


class ClusterPods(Mirror):
    """Bound pods kopf does not see: unlabelled ones, and in namespaced mode (``watched``
    non-empty) every pod outside the ``watched`` namespaces."""

    def __init__(self, rest: Source, watched: tuple[str, ...]) -> None:
        super().__init__(rest, PODS, self._slim, BOUND)
        self.watched = frozenset(watched)

    def pods(self) -> list[Mapping[str, Any]]:
        return list(self.values())

    def seen_by_kopf(self, pod: Mapping[str, Any]) -> bool:
        meta = pod.get("metadata") or {}
        labelled = TOPOLOGY_LABEL in (meta.get("labels") or {})
        return labelled and (not self.watched or str(meta.get("namespace")) in self.watched)

    def _slim(self, pod: Mapping[str, Any]) -> tuple[Key, dict[str, Any] | None]:
        meta = pod.get("metadata") or {}
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        if self.seen_by_kopf(pod):
            return key, None  # kopf's own index has it
        return key, slim_pod(pod)
