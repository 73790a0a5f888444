"""The ComputeDomain of a job whose groups span GB200 trays, and its pods' channel claim (pure).

Theory of operation
-------------------
NVIDIA's DRA driver for GPUs (github.com/NVIDIA/k8s-dra-driver-gpu) serves
``resource.nvidia.com/v1beta1`` ``ComputeDomain`` (api/nvidia.com/resource/v1beta1/computedomain.go
at v25.8.1): ``spec.numNodes`` and ``spec.channel.resourceClaimTemplate.name``. Its controller
creates a ResourceClaimTemplate of that name in the ComputeDomain's namespace; a pod joins the
domain's IMEX channel by claiming it (``spec.resourceClaims[].resourceClaimTemplateName`` plus
``resources.claims[].name`` in the container), which is what lets GPUs of different trays talk
over NVLink (the driver's demo/specs/imex/channel-injection.yaml at v25.8.1). The driver gives
each node one channel device (channel 0, one claim at a time: cmd/compute-domain-kubelet-plugin
/device_state.go), so one pod per node joins.

fabricfit creates one ComputeDomain per TrainingTopology, named after it, owned by it (garbage
collection removes it with the TrainingTopology), spanning every node of the plan (``numNodes``:
the job's distinct nodes). One ComputeDomain may hold nodes of several NVLink domains: the driver
records each node's clique (``status.nodes[].cliqueID``) and an IMEX daemon peers only with the
nodes of its own clique (cmd/compute-domain-daemon/dnsnames.go), so a job over two racks needs
one ComputeDomain, not two. The channel template is
``<topology>-channel``.

The claim lives in the pod spec, and Kubernetes does not let it be added later: a suspended
Job's template only takes scheduling directives, labels, annotations and gates (batch
validation ``validatePodTemplateUpdate``), JobSet's webhook allows the same set, and a pod's
``resourceClaims`` are immutable. So the workload must name the channel template when it is
created; :func:`claims_channel` checks that it does, and :func:`claim_snippet` says what to add.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from fabricfit.api.constants import GROUP, KIND, TOPOLOGY_LABEL, VERSION
from fabricfit.placement.nvlink_span import NvlinkSpan

CD_GROUP: Final = "resource.nvidia.com"
CD_VERSION: Final = "v1beta1"
CD_API_VERSION: Final = f"{CD_GROUP}/{CD_VERSION}"
CD_KIND: Final = "ComputeDomain"
CD_PLURAL: Final = "computedomains"
CD_CRD: Final = f"{CD_PLURAL}.{CD_GROUP}"
#: The pod-level claim name fabricfit suggests (any name works: the template name is matched).
CHANNEL_CLAIM: Final = "nvlink-channel"
_CHANNEL_SUFFIX: Final = "-channel"
_MAX_NAME: Final = 253


def compute_domain_name(topology: str) -> str:
    """The ComputeDomain of TrainingTopology ``topology`` (same namespace, same name)."""
    return topology


def channel_template_name(topology: str) -> str:
    """The ResourceClaimTemplate the driver creates for the ComputeDomain's channel."""
    name = topology + _CHANNEL_SUFFIX
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(topology.encode()).hexdigest()[:10]
    keep = _MAX_NAME - len(_CHANNEL_SUFFIX) - len(digest) - 1
    return f"{topology[:keep].rstrip('-.')}-{digest}{_CHANNEL_SUFFIX}"


def build_compute_domain(
    *, topology: str, namespace: str, owner_uid: str, num_nodes: int
) -> dict[str, Any]:
    """The ComputeDomain object for ``topology``, owned by it (controller reference)."""
    return {
        "apiVersion": CD_API_VERSION,
        "kind": CD_KIND,
        "metadata": {
            "name": compute_domain_name(topology),
            "namespace": namespace,
            "labels": {TOPOLOGY_LABEL: topology},
            "ownerReferences": [
                {
                    "apiVersion": f"{GROUP}/{VERSION}",
                    "kind": KIND,
                    "name": topology,
                    "uid": owner_uid,
                    "controller": True,
                }
            ],
        },
        "spec": {
            "numNodes": num_nodes,
            "channel": {"resourceClaimTemplate": {"name": channel_template_name(topology)}},
        },
    }


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def claims_channel(template: Mapping[str, Any] | None, channel: str) -> bool:
    """Whether the pod template claims ``channel``: a pod claim from that template, used by at
    least one container."""
    spec = (template or {}).get("spec")
    if not isinstance(spec, Mapping):
        return False
    names = {
        c.get("name")
        for c in _list(spec.get("resourceClaims"))
        if isinstance(c, Mapping) and c.get("resourceClaimTemplateName") == channel
    }
    for container in _list(spec.get("containers")):
        resources = container.get("resources") if isinstance(container, Mapping) else None
        claims = _list((resources or {}).get("claims")) if isinstance(resources, Mapping) else []
        if any(isinstance(c, Mapping) and c.get("name") in names for c in claims):
            return True
    return False


def claim_snippet(channel: str) -> str:
    """What the pod template must carry to join the channel, in one line of YAML-ish words."""
    return (
        f"spec.resourceClaims: [{{name: {CHANNEL_CLAIM}, resourceClaimTemplateName: {channel}}}] "
        f"and, in the training container, resources.claims: [{{name: {CHANNEL_CLAIM}}}]"
    )


def compute_domain_state(obj: Mapping[str, Any] | None) -> str:
    """Ready or NotReady as the driver wrote it; Pending before it has (or without a driver)."""
    status = (obj or {}).get("status")
    value = status.get("status") if isinstance(status, Mapping) else None
    return value if value in ("Ready", "NotReady") else "Pending"


def num_nodes_of(obj: Mapping[str, Any] | None) -> int | None:
    """``spec.numNodes`` of an existing ComputeDomain, or None."""
    spec = (obj or {}).get("spec")
    value = spec.get("numNodes") if isinstance(spec, Mapping) else None
    return value if isinstance(value, int) else None


def need_json(span: NvlinkSpan) -> dict[str, Any]:
    """``compute_domain`` of ``fabricfit plan --json``: whether the plan needs a ComputeDomain."""
    return {
        "needed": span.needed,
        "num_nodes": len(span.nodes) if span.needed else 0,
        "groups": dict(span.groups),
        "nvlink_domains": list(span.domains),
        "shared_nodes": list(span.shared_nodes),
    }


def need_line(span: NvlinkSpan) -> str | None:
    """The text line of ``fabricfit plan`` about the ComputeDomain, when the plan needs one."""
    if not span.needed:
        return None
    line = (
        f"ComputeDomain: needed, {span.describe()} span trays of one NVLink domain; the operator "
        f"creates one of numNodes {len(span.nodes)}, whose channel (<topology>-channel) the pods "
        "must claim"
    )
    if span.shared_nodes:
        line += f"; nodes {', '.join(span.shared_nodes[:8])} carry two pods (one channel per node)"
    return line
