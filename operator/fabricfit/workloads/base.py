"""What a workload kind is to fabricfit, and the path helpers every kind module shares (pure).

Theory of operation
-------------------
Pod *k* of a workload carries ranks ``k*gpusPerPod ...``. A :class:`WorkloadKind` knows, for
one Kubernetes kind: where it is served (apiVersion, plural) and what the operator's RBAC must
grant on it; where its pod templates live and which one carries the ranks (its scheduling
constraints are the request's); how many pods it runs; how a pod's labels give its global index
*k*; whether it has a suspend flag; and whether the API server lets a template's pod affinity
change. The registry in :mod:`fabricfit.workloads` lists the kinds; each lives in its own
module, so adding a kind is one module and its tests.

An index label that is missing, not a canonical decimal, or out of the workload's range
gives ``None``. Counts that are garbage (negative, not integers) are None, absent ones default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from fabricfit.render.workload import thaw

Path = tuple[str | int, ...]
_INDEX = re.compile(r"^(0|[1-9][0-9]{0,8})$")


class WorkloadKind:
    """One supported workload kind. Subclasses set the class attributes and override the
    methods whose defaults do not fit; instances are stateless singletons."""

    #: ``workloadRef.kind``.
    name: ClassVar[str]
    #: The apiVersion the kind is served at (the ref may name another version of the group).
    api_version: ClassVar[str]
    #: The resource plural in URLs and RBAC rules.
    plural: ClassVar[str]
    #: Verbs the operator needs on ``plural`` (checked against the chart's RBAC).
    rbac_verbs: ClassVar[tuple[str, ...]] = ("get", "patch")
    #: The pod label that carries the pod's index within its job / replica set / group.
    index_label: ClassVar[str | None] = None
    #: Where the suspend flag lives; None when the kind has none.
    suspend_path: ClassVar[Path | None] = None
    #: Whether a template's pod affinity may change after creation (API server validation).
    allows_pod_affinity: ClassVar[bool] = False
    #: Whether a pod's index can be read from its labels alone (the pod-event fast path).
    index_without_workload: ClassVar[bool] = False
    #: The workload is the set of pods a selector matches, not one object.
    selects_pods: ClassVar[bool] = False
    #: The kind's pods carry no index: fabricfit labels each with one as it pins it
    #: (``index_label``; see ``workloads.deployment``).
    assigns_index: ClassVar[bool] = False
    #: Kueue admits the workload through Workloads it owns (or names), which fabricfit's
    #: AdmissionCheck follows; False where Kueue's pod integration owns them by the pods.
    admitted_as_workload: ClassVar[bool] = True
    #: Condition types (``status.conditions``) that, True, mean the workload has finished:
    #: its pods hold no GPU and send nothing any more. Empty for kinds that never finish.
    finished_conditions: ClassVar[frozenset[str]] = frozenset()

    @property
    def api_group(self) -> str:
        return self.api_version.rpartition("/")[0]

    def template_paths(self, workload: Mapping[str, Any]) -> list[Path]:
        """Where the pod templates live, in rank order."""
        return []

    def patchable(self, workload: Mapping[str, Any]) -> Mapping[str, Any]:
        """``workload`` as its templates are patched: kinds whose template fabricfit creates
        inside the object (TrainJob) add it here; the others patch the object as it is."""
        return workload

    def pod_templates(self, workload: Mapping[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
        """(path, copy of the template) for each pod template of ``workload``."""
        found: list[tuple[Path, dict[str, Any]]] = []
        for path in self.template_paths(workload):
            template = get_path(workload, path)
            if isinstance(template, Mapping):
                found.append((path, thaw(template)))
        return found

    def rank_template(self, workload: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The template whose constraints the plan honours: the last one (the workers')."""
        templates = self.pod_templates(workload)
        return templates[-1][1] if templates else None

    def expected_pods(self, workload: Mapping[str, Any]) -> int | None:
        """Pods the workload runs (each carrying one rank block), or None when unknown."""
        return None

    def template_pod_count(self, workload: Mapping[str, Any], path: Path) -> int | None:
        """Pods of the smallest Kueue PodSet built from the template at ``path``, or None."""
        return None

    def group_pods(self, workload: Mapping[str, Any]) -> int | None:
        """Pods of one group the kind runs as a unit (a LeaderWorkerSet's size), or None."""
        return None

    def kueue_workloads(self, workload: Mapping[str, Any]) -> int:
        """How many Workloads Kueue makes for the workload (one, unless the kind says)."""
        return 1

    def local_index(
        self, labels: Mapping[str, Any], workload: Mapping[str, Any] | None, index_label: str | None
    ) -> int | None:
        """The pod's global index from its labels (not yet checked against the size)."""
        return None

    def pod_spec_frozen(self, workload: Mapping[str, Any]) -> bool:
        """Whether the templates' pod specs can no longer change (only their metadata can),
        beyond what ``allows_pod_affinity`` already says for every workload of the kind."""
        return False

    def finished(self, workload: Mapping[str, Any]) -> str | None:
        """The condition type saying the workload finished (``finished_conditions``), if any."""
        for condition in get_path(workload, ("status", "conditions")) or []:
            if (
                isinstance(condition, Mapping)
                and condition.get("type") in self.finished_conditions
                and condition.get("status") == "True"
            ):
                return str(condition["type"])
        return None

    def is_suspended(self, workload: Mapping[str, Any]) -> bool | None:
        """The workload's suspend flag; None for kinds that have none."""
        if self.suspend_path is None:
            return None
        return get_path(workload, self.suspend_path) is True

    def unsuspend_patch(self) -> dict[str, Any] | None:
        """The merge patch that lets the workload start; None without a suspend flag."""
        if self.suspend_path is None:
            return None
        patch: dict[str, Any] = {}
        put_path(patch, self.suspend_path, False)
        return patch


def parse_index(value: Any) -> int | None:
    """A label's value as an index: canonical decimal only ("007", "-1", " 3" are None)."""
    if not isinstance(value, str) or not _INDEX.match(value):
        return None
    return int(value)


def count(value: Any, default: int | None) -> int | None:
    """A non-negative replica/completion count; ``default`` when absent, None when garbage."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def get_path(obj: Any, path: Path) -> Any:
    """The value at ``path`` (map keys and list positions), or None when any step is missing."""
    for part in path:
        if isinstance(part, int):
            if not isinstance(obj, list) or not 0 <= part < len(obj):
                return None
        elif not isinstance(obj, Mapping) or part not in obj:
            return None
        obj = obj[part]
    return obj


def put_path(obj: Any, path: Path, value: Any) -> None:
    """Set ``value`` at ``path`` of ``obj``, creating maps on the way (lists must exist)."""
    for part in path[:-1]:
        obj = obj[part] if isinstance(part, int) else obj.setdefault(part, {})
    obj[path[-1]] = value


def dotted(path: Path) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")
