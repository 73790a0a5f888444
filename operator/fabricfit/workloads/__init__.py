"""The workload kinds fabricfit places, one module each, and what callers ask of any kind (pure).

Theory of operation
-------------------
:data:`KINDS` is the registry: ``workloadRef.kind`` → :class:`~.base.WorkloadKind` (Job,
JobSet, PyTorchJob, LeaderWorkerSet, TrainJob, Pod). The kube layer reads its apiVersion and
plural, the reconcile its templates, index and suspension, the chart's RBAC test its verbs. The
functions below take a kind *name* so that callers holding a ``workloadRef`` need no lookup of
their own; an unknown name behaves like a kind with no templates, index or suspend flag.

Patches are JSON merge patches: maps merge but lists are replaced, so a change to a template
reached through a list (a JobSet's replicated jobs) rewrites the whole list (other fields as
read). To add a kind: write its module (subclass ``WorkloadKind``, instance ``KIND``; this
package's modules are the registry) and its tests under ``tests/unit/workloads/``, then
``make crd`` (the CRD's kind list and the chart's RBAC rules are generated from the registry).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from fabricfit.render.workload import merge_diff, thaw
from fabricfit.workloads.base import Path, WorkloadKind, dotted, get_path, put_path


def _discover() -> Mapping[str, WorkloadKind]:
    """Every module's ``KIND`` (modules but ``base``), in module order."""
    found: dict[str, WorkloadKind] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        kind = getattr(importlib.import_module(f"{__name__}.{info.name}"), "KIND", None)
        if isinstance(kind, WorkloadKind):
            found[kind.name] = kind
    return MappingProxyType(found)


KINDS: Final[Mapping[str, WorkloadKind]] = _discover()
_NONE = WorkloadKind()


def kind_named(name: str) -> WorkloadKind | None:
    """The registered kind called ``name``, or None."""
    return KINDS.get(name)


def _of(name: str) -> WorkloadKind:
    return KINDS.get(name, _NONE)


def allows_pod_affinity(kind: str) -> bool:
    """Whether the template's pod affinity may change after creation. A suspended Job only
    lets labels, annotations, node selector/affinity, tolerations and gates change (API server
    validation); the JobSet webhook is stricter still."""
    return _of(kind).allows_pod_affinity


def pod_spec_frozen(kind: str, workload: Mapping[str, Any]) -> bool:
    """Whether ``workload``'s template pod specs can no longer change (a LeaderWorkerSet with
    a Kueue queue name): fabricfit then writes template metadata only."""
    return _of(kind).pod_spec_frozen(workload)


def pod_templates(kind: str, workload: Mapping[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """(path, copy of the template) for each pod template of ``workload``; [] for kind Pod."""
    return _of(kind).pod_templates(workload)


def rank_template(kind: str, workload: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The pod template whose scheduling constraints the plan must honour, or None."""
    return None if workload is None else _of(kind).rank_template(workload)


def expected_pods(kind: str, workload: Mapping[str, Any]) -> int | None:
    """Pods the workload runs (each carrying one rank block), or None when unknown."""
    return _of(kind).expected_pods(workload)


def template_pod_count(kind: str, workload: Mapping[str, Any], path: Path) -> int | None:
    """Pods of the smallest Kueue PodSet built from the template at ``path``, or None.

    Kueue validates slice sizes per PodSet (see each kind's module for its PodSets)."""
    return _of(kind).template_pod_count(workload, path)


def kueue_workloads(kind: str, workload: Mapping[str, Any] | None) -> int:
    """How many Workloads Kueue makes for the workload (one per LeaderWorkerSet group)."""
    found = kind_named(kind)
    return 1 if found is None or workload is None else max(1, found.kueue_workloads(workload))


def is_suspended(kind: str, workload: Mapping[str, Any]) -> bool | None:
    """The workload's suspend flag; None for kinds that have none (LeaderWorkerSet, Pod)."""
    return _of(kind).is_suspended(workload)


def finished(kind: str, workload: Mapping[str, Any] | None) -> str | None:
    """The condition saying the workload finished (Job ``Complete``/``Failed``, JobSet
    ``Completed``/``Failed``, ...), or None while it has not (or its kind never finishes)."""
    return None if workload is None else _of(kind).finished(workload)


def build_unsuspend_patch(kind: str) -> dict[str, Any] | None:
    """The merge patch that lets the workload start; None for kinds without a suspend flag."""
    return _of(kind).unsuspend_patch()


def pod_index(
    kind: str,
    pod: Mapping[str, Any],
    workload: Mapping[str, Any] | None = None,
    *,
    index_label: str | None = None,
) -> int | None:
    """The pod's global index in its workload (see the kind's module), or None.

    JobSet and LeaderWorkerSet need ``workload`` (pods per job / group size); PyTorchJob uses
    it for the number of Master replicas (assumed 1 without it); kind Pod needs
    ``index_label``. With ``workload``, an index beyond :func:`expected_pods` is None.
    """
    labels = get_path(pod, ("metadata", "labels"))
    labels = labels if isinstance(labels, Mapping) else {}
    found = _of(kind)
    index = found.local_index(labels, workload, index_label)
    if index is None or workload is None:
        return index
    total = found.expected_pods(workload)
    return index if total is None or index < total else None


def build_workload_patch(
    kind: str,
    workload: Mapping[str, Any],
    new_templates: Sequence[tuple[Path, Mapping[str, Any]]],
) -> dict[str, Any]:
    """A JSON merge patch that turns ``workload``'s templates into ``new_templates``.

    Map paths carry a minimal diff (removed keys as ``null``); a path through a list carries
    the whole list. ``{}`` when nothing changes. Raises ValueError for a path that is not one
    of the kind's templates.
    """
    known = {path for path, _ in pod_templates(kind, workload)}
    view = _of(kind).patchable(workload)  # the object with any template the kind creates
    patch: dict[str, Any] = {}
    lists: dict[Path, Any] = {}
    for path, template in new_templates:
        if path not in known:
            raise ValueError(f"{kind} has no pod template at {dotted(path)}")
        cut = next((i for i, part in enumerate(path) if isinstance(part, int)), None)
        if cut is None:
            diff = merge_diff(get_path(workload, path), template)
            if diff:
                put_path(patch, path, diff)
            continue
        prefix = path[:cut]
        container = lists.setdefault(prefix, thaw(get_path(view, prefix)))
        put_path(container, path[cut:], thaw(template))
    for prefix, value in lists.items():
        if value != get_path(workload, prefix):
            put_path(patch, prefix, value)
    return patch


__all__ = [
    "KINDS",
    "Path",
    "WorkloadKind",
    "allows_pod_affinity",
    "build_unsuspend_patch",
    "build_workload_patch",
    "expected_pods",
    "is_suspended",
    "kind_named",
    "kueue_workloads",
    "pod_index",
    "pod_templates",
    "rank_template",
    "template_pod_count",
]
