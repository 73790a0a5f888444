"""Reading and patching the workloads TrainingTopologies point at, and their pods.

Each supported kind is addressed by apiVersion and plural; kinds whose CRDs are absent simply
read as "not found". Plain-Pod workloads (``kind: Pod``) are the pods matching the
TrainingTopology's ``workloadRef.podSelector`` in its namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fabricfit.api.models import WorkloadRef
from fabricfit.kube.rest import ApiError, Rest, path_for
from fabricfit.render.kinds import API_VERSIONS

POD_KIND = "Pod"


@dataclass(frozen=True)
class KindInfo:
    kind: str
    api_version: str
    plural: str


# Kubernetes plurals of the workload kinds; their apiVersions are render.kinds.API_VERSIONS.
PLURALS: dict[str, str] = {
    "Job": "jobs",
    "JobSet": "jobsets",
    "PyTorchJob": "pytorchjobs",
    "LeaderWorkerSet": "leaderworkersets",
}
KINDS: dict[str, KindInfo] = {
    kind: KindInfo(kind, API_VERSIONS[kind], plural) for kind, plural in PLURALS.items()
}


class UnsupportedWorkloadError(ValueError):
    """The workloadRef names a kind (or apiVersion) fabricfit cannot place."""


def kind_info(ref: WorkloadRef) -> KindInfo | None:
    """Coordinates of a workload kind; None for plain Pods. Raises for unsupported kinds."""
    if ref.kind == POD_KIND:
        if ref.api_version != "v1":
            raise UnsupportedWorkloadError(f"kind Pod needs apiVersion v1, not {ref.api_version}")
        return None
    info = KINDS.get(ref.kind)
    if info is None:
        supported = ", ".join([*KINDS, POD_KIND])
        raise UnsupportedWorkloadError(
            f"workload kind {ref.kind} is not supported (supported: {supported})"
        )
    if ref.api_version.split("/")[0] != info.api_version.split("/")[0]:
        raise UnsupportedWorkloadError(
            f"{ref.kind} must use API group {info.api_version.split('/')[0]}"
        )
    return KindInfo(info.kind, ref.api_version, info.plural)


def selector_string(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


async def read_workload(rest: Rest, ref: WorkloadRef, namespace: str) -> dict[str, Any] | None:
    """The workload object, or None when it does not exist (or its CRD is not installed)."""
    info = kind_info(ref)
    if info is None:
        pods = await rest.list(
            path_for("v1", "pods", namespace),
            label_selector=selector_string(ref.pod_selector or {}),
        )
        return {"apiVersion": "v1", "kind": "PodGroup", "items": pods} if pods else None
    try:
        return await rest.get(path_for(info.api_version, info.plural, namespace, ref.name))
    except ApiError as err:
        if err.status == 404 or (err.status == 0 and "not found" in err.message.lower()):
            return None
        raise


async def patch_workload(
    rest: Rest, ref: WorkloadRef, namespace: str, body: dict[str, Any]
) -> None:
    info = kind_info(ref)
    if info is None:
        raise UnsupportedWorkloadError("plain Pods cannot be patched as a workload")
    await rest.patch(path_for(info.api_version, info.plural, namespace, ref.name), body, "merge")


async def patch_pod(
    rest: Rest, namespace: str, name: str, ops: list[dict[str, Any]]
) -> dict[str, Any]:
    return await rest.patch(path_for("v1", "pods", namespace, name), ops, "json")


async def patch_status(
    rest: Rest, namespace: str, name: str, status: dict[str, Any], api_version: str, plural: str
) -> dict[str, Any]:
    """Merge-patch the status subresource of one of our objects."""
    path = path_for(api_version, plural, namespace, name, "status")
    return await rest.patch(path, {"status": status}, "merge")
