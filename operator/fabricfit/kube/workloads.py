"""Reading and patching the workloads TrainingTopologies point at, and their pods.

Each supported kind is addressed by apiVersion and plural; kinds whose CRDs are absent simply
read as "not found". Plain-Pod workloads (``kind: Pod``) are the pods matching the
TrainingTopology's ``workloadRef.podSelector`` in its namespace.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fabricfit.api.constants import DRA_GROUP, DRA_VERSION
from fabricfit.api.models import WorkloadRef
from fabricfit.kube.rest import ApiError, Rest, path_for
from fabricfit.workloads import KINDS, WorkloadKind
from fabricfit.workloads.pod import pod_group


class UnsupportedWorkloadError(ValueError):
    """The workloadRef names a kind (or apiVersion) fabricfit cannot place."""


def kind_of(ref: WorkloadRef) -> WorkloadKind:
    """The registered kind of ``ref``; raises for an unknown kind or a foreign API group."""
    kind = KINDS.get(ref.kind)
    if kind is None:
        supported = ", ".join(KINDS)
        raise UnsupportedWorkloadError(
            f"workload kind {ref.kind} is not supported (supported: {supported})"
        )
    if not kind.api_group and ref.api_version != kind.api_version:
        raise UnsupportedWorkloadError(
            f"kind {kind.name} needs apiVersion {kind.api_version}, not {ref.api_version}"
        )
    if ref.api_version.rpartition("/")[0] != kind.api_group:
        raise UnsupportedWorkloadError(f"{ref.kind} must use API group {kind.api_group}")
    return kind


def selector_string(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


async def read_workload(rest: Rest, ref: WorkloadRef, namespace: str) -> dict[str, Any] | None:
    """The workload object, or None when it does not exist (or its CRD is not installed)."""
    kind = kind_of(ref)
    if kind.selects_pods:
        pods = await rest.list(
            path_for(kind.api_version, kind.plural, namespace),
            label_selector=selector_string(ref.pod_selector or {}),
        )
        return pod_group(pods)
    try:
        return await rest.get(path_for(ref.api_version, kind.plural, namespace, ref.name))
    except ApiError as err:
        if err.status == 404 or (err.status == 0 and "not found" in err.message.lower()):
            return None
        raise


async def read_claim_templates(
    rest: Rest, namespace: str, names: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """The ResourceClaimTemplates of ``names`` that exist in ``namespace`` (404: left out, as
    when resource.k8s.io is not served)."""
    found: dict[str, dict[str, Any]] = {}
    for name in sorted(set(names)):
        path = path_for(f"{DRA_GROUP}/{DRA_VERSION}", "resourceclaimtemplates", namespace, name)
        template = await rest.get(path)
        if template is not None:
            found[name] = template
    return found


async def patch_workload(
    rest: Rest, ref: WorkloadRef, namespace: str, body: dict[str, Any]
) -> None:
    kind = kind_of(ref)
    if kind.selects_pods:
        raise UnsupportedWorkloadError("plain Pods cannot be patched as a workload")
    await rest.patch(path_for(ref.api_version, kind.plural, namespace, ref.name), body, "merge")
