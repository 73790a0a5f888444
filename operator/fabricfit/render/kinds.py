"""Where each workload kind keeps its pod templates, its pod index and its suspend flag (pure).

Theory of operation
-------------------
Pod *k* of a workload carries ranks ``k*gpusPerPod ...``; each kind numbers its pods with its
own labels, and this module turns them into that one global index *k*:

* Job (``spec.template``): the completion index (Indexed Jobs only).
* JobSet (``spec.replicatedJobs[i].template.spec.template``): replicated jobs in spec order,
  so k = (pods of the replicated jobs before it) + job-index · pods-per-job + completion
  index, as Kueue's rank ordering numbers them (reference/kueue-tas.md §2.5).
* PyTorchJob (``spec.pytorchReplicaSpecs.{Master,Worker}.template``): k is the ``RANK`` the
  Kubeflow training operator gives the pod: the replica index for the Master, index + Master
  replicas (1) for Worker *i* (``pkg/controller.v1/pytorch/envvar.go``); the replica-type
  label value is lower case there and compared case-insensitively here.
* LeaderWorkerSet (``spec.leaderWorkerTemplate.{leaderTemplate,workerTemplate}``): k = group
  index · size + worker index (the leader is worker 0).
* Pod (no template): the value of the TrainingTopology's ``indexLabel``.

An index label that is missing, not a canonical decimal, or out of the workload's range
gives ``None``. Patches are JSON merge patches: maps merge but lists are replaced, so a
JobSet template change rewrites the whole ``replicatedJobs`` list (other fields as read).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from fabricfit.api.constants import (
    JOB_COMPLETION_INDEX_LABEL,
    JOBSET_JOB_INDEX_LABEL,
    JOBSET_REPLICATED_JOB_LABEL,
    KUBEFLOW_REPLICA_INDEX_LABEL,
    KUBEFLOW_REPLICA_TYPE_LABEL,
    LWS_GROUP_INDEX_LABEL,
    LWS_WORKER_INDEX_LABEL,
)
from fabricfit.render.workload import merge_diff, thaw

Path = tuple[str | int, ...]

#: The apiVersion each supported kind is served at.
API_VERSIONS: Final[Mapping[str, str]] = {
    "Job": "batch/v1",
    "JobSet": "jobset.x-k8s.io/v1alpha2",
    "PyTorchJob": "kubeflow.org/v1",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1",
    "Pod": "v1",
}
PYTORCH_REPLICA_TYPES: Final = ("Master", "Worker")
_INDEX = re.compile(r"^(0|[1-9][0-9]{0,8})$")


def is_supported(api_version: str, kind: str) -> bool:
    """Whether fabricfit can place a workload of this apiVersion and kind."""
    return API_VERSIONS.get(kind) == api_version


def allows_pod_affinity(kind: str) -> bool:
    """Whether the template's pod affinity may change after creation. A suspended Job only
    lets labels, annotations, node selector/affinity, tolerations and gates change (API server
    validation); the JobSet webhook is stricter still."""
    return kind in ("PyTorchJob", "LeaderWorkerSet")


def pod_templates(kind: str, workload: Mapping[str, Any]) -> list[tuple[Path, dict[str, Any]]]:
    """(path, copy of the template) for each pod template of ``workload``; [] for kind Pod."""
    found: list[tuple[Path, dict[str, Any]]] = []
    for path in _template_paths(kind, workload):
        template = _get(workload, path)
        if isinstance(template, Mapping):
            found.append((path, thaw(template)))
    return found


def _template_paths(kind: str, workload: Mapping[str, Any]) -> list[Path]:
    if kind == "Job":
        return [("spec", "template")]
    if kind == "JobSet":
        jobs = _get(workload, ("spec", "replicatedJobs"))
        count = len(jobs) if isinstance(jobs, list) else 0
        return [("spec", "replicatedJobs", i, "template", "spec", "template") for i in range(count)]
    if kind == "PyTorchJob":
        return [("spec", "pytorchReplicaSpecs", t, "template") for t in PYTORCH_REPLICA_TYPES]
    if kind == "LeaderWorkerSet":
        base: Path = ("spec", "leaderWorkerTemplate")
        return [(*base, "leaderTemplate"), (*base, "workerTemplate")]
    return []


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
    patch: dict[str, Any] = {}
    lists: dict[Path, Any] = {}
    for path, template in new_templates:
        if path not in known:
            raise ValueError(f"{kind} has no pod template at {_dotted(path)}")
        cut = next((i for i, part in enumerate(path) if isinstance(part, int)), None)
        if cut is None:
            diff = merge_diff(_get(workload, path), template)
            if diff:
                _put(patch, path, diff)
            continue
        prefix = path[:cut]
        container = lists.setdefault(prefix, thaw(_get(workload, prefix)))
        _put(container, path[cut:], thaw(template))
    for prefix, value in lists.items():
        if value != _get(workload, prefix):
            _put(patch, prefix, value)
    return patch


def template_pod_count(kind: str, workload: Mapping[str, Any], path: Path) -> int | None:
    """Pods of the smallest Kueue PodSet built from the template at ``path``, or None.

    Kueue validates slice sizes per PodSet. A LeaderWorkerSet is admitted one group at a time,
    as a leader PodSet (1 pod) and a worker PodSet (size - 1); without a leader template the
    worker template also makes the leader's PodSet.
    """
    if kind == "Job":
        return expected_pods(kind, workload)
    if kind == "JobSet" and len(path) > 2 and isinstance(path[2], int):
        rj = _get(workload, path[:3])
        per_job, replicas = _job_shape(rj) if isinstance(rj, Mapping) else (None, None)
        return per_job * replicas if per_job is not None and replicas is not None else None
    if kind == "PyTorchJob" and len(path) > 2:
        return _pytorch_replicas(workload, str(path[2]))
    if kind == "LeaderWorkerSet":
        base = ("spec", "leaderWorkerTemplate")
        size = _count(_get(workload, (*base, "size")), 1)
        if path[-1] == "leaderTemplate" or _get(workload, (*base, "leaderTemplate")) is None:
            return 1
        return size - 1 if size is not None else None
    return None


def expected_pods(kind: str, workload: Mapping[str, Any]) -> int | None:
    """Pods the workload runs (each carrying one rank block), or None when unknown."""
    spec = _get(workload, ("spec",))
    if not isinstance(spec, Mapping):
        return None
    if kind == "Job":
        if spec.get("completionMode") != "Indexed":
            return None
        return _count(spec.get("completions"), None)
    if kind == "JobSet":
        shapes = [_job_shape(rj) for rj in _replicated_jobs(workload)]
        sizes = [p * r for p, r in shapes if p is not None and r is not None]
        return sum(sizes) if shapes and len(sizes) == len(shapes) else None
    if kind == "PyTorchJob":
        replicas = [_pytorch_replicas(workload, t) for t in PYTORCH_REPLICA_TYPES]
        return sum(r for r in replicas if r is not None) or None
    if kind == "LeaderWorkerSet":
        size = _count(_get(spec, ("leaderWorkerTemplate", "size")), 1)
        groups = _count(spec.get("replicas"), 1)
        return size * groups if size is not None and groups is not None else None
    return None


def is_suspended(kind: str, workload: Mapping[str, Any]) -> bool | None:
    """The workload's suspend flag; None for kinds that have none (LeaderWorkerSet, Pod)."""
    path = _suspend_path(kind)
    if path is None:
        return None
    return _get(workload, path) is True


def build_unsuspend_patch(kind: str) -> dict[str, Any] | None:
    """The merge patch that lets the workload start; None for kinds without a suspend flag."""
    path = _suspend_path(kind)
    if path is None:
        return None
    patch: dict[str, Any] = {}
    _put(patch, path, False)
    return patch


def _suspend_path(kind: str) -> Path | None:
    if kind in ("Job", "JobSet"):
        return ("spec", "suspend")
    if kind == "PyTorchJob":
        return ("spec", "runPolicy", "suspend")
    return None


def pod_index(
    kind: str,
    pod: Mapping[str, Any],
    workload: Mapping[str, Any] | None = None,
    *,
    index_label: str | None = None,
) -> int | None:
    """The pod's global index in its workload (see the module table), or None.

    JobSet and LeaderWorkerSet need ``workload`` (pods per job / group size); PyTorchJob uses
    it for the number of Master replicas (assumed 1 without it); kind Pod needs
    ``index_label``. With ``workload``, an index beyond :func:`expected_pods` is None.
    """
    labels = _get(pod, ("metadata", "labels"))
    labels = labels if isinstance(labels, Mapping) else {}
    index = _local_index(kind, labels, workload, index_label)
    if index is None or workload is None:
        return index
    total = expected_pods(kind, workload)
    return index if total is None or index < total else None


def _local_index(
    kind: str,
    labels: Mapping[str, Any],
    workload: Mapping[str, Any] | None,
    index_label: str | None,
) -> int | None:
    if kind == "Job":
        return parse_index(labels.get(JOB_COMPLETION_INDEX_LABEL))
    if kind == "JobSet":
        return _jobset_index(labels, workload) if workload is not None else None
    if kind == "PyTorchJob":
        return _pytorch_index(labels, workload)
    if kind == "LeaderWorkerSet":
        return _lws_index(labels, workload) if workload is not None else None
    if kind == "Pod" and index_label:
        return parse_index(labels.get(index_label))
    return None


def parse_index(value: Any) -> int | None:
    """A label's value as an index: canonical decimal only ("007", "-1", " 3" are None)."""
    if not isinstance(value, str) or not _INDEX.match(value):
        return None
    return int(value)


def _jobset_index(labels: Mapping[str, Any], workload: Mapping[str, Any]) -> int | None:
    jobs = _replicated_jobs(workload)
    name = labels.get(JOBSET_REPLICATED_JOB_LABEL)
    if name is None and len(jobs) == 1:
        name = jobs[0].get("name")
    offset = 0
    for rj in jobs:
        per_job, replicas = _job_shape(rj)
        if per_job is None or replicas is None:
            return None
        if rj.get("name") == name:
            job = parse_index(labels.get(JOBSET_JOB_INDEX_LABEL))
            completion = parse_index(labels.get(JOB_COMPLETION_INDEX_LABEL))
            if job is None or completion is None or job >= replicas or completion >= per_job:
                return None
            return offset + job * per_job + completion
        offset += replicas * per_job
    return None


def _pytorch_index(labels: Mapping[str, Any], workload: Mapping[str, Any] | None) -> int | None:
    replica_type = labels.get(KUBEFLOW_REPLICA_TYPE_LABEL)
    index = parse_index(labels.get(KUBEFLOW_REPLICA_INDEX_LABEL))
    if not isinstance(replica_type, str) or index is None:
        return None
    masters = 1 if workload is None else (_pytorch_replicas(workload, "Master") or 0)
    if replica_type.lower() == "master":
        return index if index < masters else None
    if replica_type.lower() == "worker":
        return index + masters
    return None


def _lws_index(labels: Mapping[str, Any], workload: Mapping[str, Any]) -> int | None:
    size = _count(_get(workload, ("spec", "leaderWorkerTemplate", "size")), 1)
    group = parse_index(labels.get(LWS_GROUP_INDEX_LABEL))
    worker = parse_index(labels.get(LWS_WORKER_INDEX_LABEL))
    if size is None or group is None or worker is None or worker >= size:
        return None
    return group * size + worker


def _replicated_jobs(workload: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    jobs = _get(workload, ("spec", "replicatedJobs"))
    return [rj for rj in jobs if isinstance(rj, Mapping)] if isinstance(jobs, list) else []


def _job_shape(rj: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(pods per job, jobs) of a replicated job; None where unknown or not Indexed."""
    spec = _get(rj, ("template", "spec"))
    if not isinstance(spec, Mapping) or spec.get("completionMode", "Indexed") != "Indexed":
        return None, None
    per_job = _count(spec.get("completions"), None) or _count(spec.get("parallelism"), 1)
    return per_job, _count(rj.get("replicas"), 1)


def _pytorch_replicas(workload: Mapping[str, Any], replica_type: str) -> int | None:
    spec = _get(workload, ("spec", "pytorchReplicaSpecs", replica_type))
    return _count(spec.get("replicas"), 1) if isinstance(spec, Mapping) else None


def _count(value: Any, default: int | None) -> int | None:
    """A non-negative replica/completion count; ``default`` when absent, None when garbage."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _get(obj: Any, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(obj, list) or not 0 <= part < len(obj):
                return None
        elif not isinstance(obj, Mapping) or part not in obj:
            return None
        obj = obj[part]
    return obj


def _put(obj: Any, path: Path, value: Any) -> None:
    """Set ``value`` at ``path`` of ``obj``, creating maps on the way (lists must exist)."""
    for part in path[:-1]:
        obj = obj[part] if isinstance(part, int) else obj.setdefault(part, {})
    obj[path[-1]] = value


def _dotted(path: Path) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else p for p in path).replace(".[", "[")
