"""GB200 NVL72 trays and NVIDIA's ComputeDomain for end-to-end tests.

NVIDIA's DRA driver needs GPUs and does not run here; its CRD comes from the project's own test
fixture (``tests/fixtures/computedomain``, the driver's Go module is refused by the module proxy)
and these helpers play the two parts of the driver a pod's scheduling depends on: the
controller's channel ResourceClaimTemplate and the kubelet plugin's channel ResourceSlices.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fabricfit_dev import paths

CRD_FILE = paths.FIXTURES / "computedomain" / "computedomains.resource.nvidia.com.yaml"
CRD = "computedomains.resource.nvidia.com"
CD = ("resource.nvidia.com", "v1beta1", "computedomains")
DRA = ("resource.k8s.io", "v1")
#: As the driver names them (its chart's DeviceClass and the kubelet plugin's driver name).
CHANNEL_CLASS = "compute-domain-default-channel.nvidia.com"
CHANNEL_DRIVER = "compute-domain.nvidia.com"
GB200 = {
    "rail_groups_per_spine": 1,
    "nodes_per_rail_group": 18,
    "nodes_per_rack": 18,
    "nvlink_domain_nodes": 18,
    "gpus_per_node": 4,
    "nics_per_node": 4,
    "fabric": "gb200-nvl72",
}


def tray_job(name: str, pods: int, pool: str, channel: str | None) -> dict[str, Any]:
    """An Indexed Job of 4-GPU pods, claiming the ComputeDomain's channel when ``channel``."""
    container: dict[str, Any] = {
        "name": "train",
        "image": "example.invalid/train:1",
        "resources": {"limits": {"nvidia.com/gpu": "4"}},
    }
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": {"fabricfit.dev/pool": pool},
        "containers": [container],
    }
    if channel:
        spec["resourceClaims"] = [{"name": "nvlink-channel", "resourceClaimTemplateName": channel}]
        container["resources"]["claims"] = [{"name": "nvlink-channel"}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"suspend": True, "completionMode": "Indexed", "completions": pods,
                 "parallelism": pods, "backoffLimit": 100, "template": {"spec": spec}},
    }  # fmt: skip


def kubectl_ok(kubectl: list[str], *args: str) -> None:
    subprocess.run([*kubectl, *args], check=True, capture_output=True)


def remove_crd(kubectl: list[str]) -> None:
    kubectl_ok(kubectl, "delete", f"crd/{CRD}", "--ignore-not-found", "--wait=true")


@contextmanager
def installed_crd(kubectl: list[str]) -> Iterator[None]:
    """The ComputeDomain CRD, established, for the duration of the block."""
    kubectl_ok(kubectl, "apply", "-f", str(CRD_FILE))
    kubectl_ok(kubectl, "wait", "--for=condition=Established", f"crd/{CRD}", "--timeout=60s")
    yield
    remove_crd(kubectl)


def publish_channels(custom: Any, nodes: list[str]) -> None:
    """The kubelet plugin's part: one channel device per node, and the driver's DeviceClass."""
    from kubernetes.client.exceptions import ApiException

    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": CHANNEL_CLASS},
        "spec": {"selectors": [{"cel": {"expression": (
            f"device.driver == '{CHANNEL_DRIVER}' && "
            f"device.attributes['{CHANNEL_DRIVER}'].type == 'channel'"
        )}}]},
    }  # fmt: skip
    objects = [("deviceclasses", device_class)]
    for node in nodes:
        objects.append(("resourceslices", {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-channels"},
            "spec": {
                "driver": CHANNEL_DRIVER, "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "channel-0", "attributes": {
                    "type": {"string": "channel"}, "id": {"int": 0}}}],
            },
        }))  # fmt: skip
    for plural, body in objects:
        try:
            custom.create_cluster_custom_object(*DRA, plural, body)
        except ApiException as err:
            if err.status != 409:
                raise


def channel_template(name: str) -> dict[str, Any]:
    """The controller's part: the channel's ResourceClaimTemplate, named by the ComputeDomain."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "channel", "exactly": {"deviceClassName": CHANNEL_CLASS}}]}}},
    }  # fmt: skip
