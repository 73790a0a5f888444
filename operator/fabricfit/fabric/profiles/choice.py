"""Which fabric profile prices a job: the one rule `fabricfit plan` and the operator share.

Theory of operation
-------------------
First match wins:

1. an explicit request (``fabricfit plan --fabric``/``--fabric-file``);
2. ``spec.fabric`` (``auto`` or empty: keep going);
3. the node label ``topology.fabricfit.dev/fabric`` (a preset or a custom profile's name);
4. the node's instance type (``node.kubernetes.io/instance-type``, else the older
   ``beta.kubernetes.io/instance-type``) when it names a cloud machine with a preset
   (:data:`INSTANCE_PRESETS`): EKS p5, GKE A3 Mega/A3 Ultra/A4/A4X, Azure ND v4/v5, OKE's
   BM.GPU.H100.8 and BM.GPU4.8;
5. the default (the operator's ``--fabric``, ``dgx-h100`` for the CLI).

Steps 3–5 look at the GPU nodes that can take pods (every GPU node when none can, every node
when none has GPUs): each node counts once, for its label's fabric, else its instance type's
preset, else the fabric the snapshot gave it (the default for unlabelled nodes, as the design's
label table says). The most common known fabric wins (ties: by name) and the reason says how
many nodes named it and which other fabrics were seen: the cost model prices one fabric per
job, so a mixed cluster is priced as its dominant fabric; keep a job on one fabric with
``spec.fabric`` plus a ``nodeSelector``. A label naming no known profile is skipped and named
(node and label) in the reason; when no node names a known fabric the error names them. The
reason is one sentence, written to ``status.fabricReason`` and printed by ``fabricfit plan``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabricfit.api.constants import LABEL_FABRIC
from fabricfit.fabric.names import suggestion
from fabricfit.fabric.objects import shorten
from fabricfit.fabric.profiles import FabricProfile, ProfileError
from fabricfit.fabric.profiles.catalog import Catalog
from fabricfit.fabric.topology import NodeInfo

AUTO_FABRIC = "auto"
INSTANCE_TYPE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
# Machine types whose hardware a preset describes (GPU baseboard, NIC count and line rate).
INSTANCE_PRESETS: Mapping[str, str] = MappingProxyType(
    {
        "p5.48xlarge": "aws-p5",
        "p5e.48xlarge": "aws-p5",  # H200, same 3,200 Gbps EFA
        "p5en.48xlarge": "aws-p5",  # H200, EFA v3 16x 200 Gbps = 3,200 Gbps
        "a3-megagpu-8g": "gcp-a3-mega",
        "a3-ultragpu-8g": "dgx-h200",  # 8x H200, 8x 400 Gbps RDMA: a DGX H200's numbers
        "a4-highgpu-8g": "gcp-a4",
        "a4x-highgpu-4g": "gb200-nvl72",  # one 4-GPU GB200 tray of an NVL72 domain
        "Standard_ND96isr_H100_v5": "azure-nd-h100-v5",
        "Standard_ND96isr_H200_v5": "dgx-h200",  # 8x H200, 8x 400 Gb/s NDR InfiniBand
        "Standard_ND96asr_A100_v4": "dgx-a100",  # 8x A100, 8x 200 Gb/s HDR InfiniBand
        "Standard_ND96amsr_A100_v4": "dgx-a100",
        # OCI bare metal (OKE sets the shape as the instance type): 16 RDMA ports per node, at
        # 200 Gb/s a DGX H100's 8x 400G in aggregate (oracle-japan/ocitutorials
        # run-nccltests-h100.md); BM.GPU4.8's 16x 100 Gb/s RoCE has a preset of its own
        "BM.GPU.H100.8": "dgx-h100",
        "BM.GPU4.8": "oci-bm-gpu4-8",
    }
)


class FabricChoiceError(ProfileError):
    """No usable fabric: the message names the spec field or the node and label at fault."""


@dataclass(frozen=True)
class FabricChoice:
    profile: FabricProfile
    reason: str  # one sentence, for status.fabricReason and `fabricfit plan`


def instance_type_of(labels: Mapping[str, str]) -> str | None:
    for key in INSTANCE_TYPE_LABELS:
        value = labels.get(key)
        if value:
            return value
    return None


def choose_profile(
    nodes: Iterable[NodeInfo],
    *,
    spec_fabric: str | None,
    default: str,
    catalog: Catalog,
    requested: FabricProfile | str | None = None,
    requested_by: str = "--fabric",
) -> FabricChoice:
    """The fabric profile for a job on ``nodes`` (module docstring); FabricChoiceError if the
    name that decides is not a known profile."""
    if isinstance(requested, FabricProfile):
        return FabricChoice(requested, f"{requested_by} gives fabric {requested.name}")
    if requested:
        return FabricChoice(_get(catalog, requested, requested_by), f"{requested_by} names it")
    if spec_fabric and spec_fabric != AUTO_FABRIC:
        return FabricChoice(_get(catalog, spec_fabric, "spec.fabric"), "spec.fabric names it")
    known, unknown = _node_fabrics(list(nodes), catalog)
    if known:
        return _majority(known, unknown, catalog)
    if unknown:
        first = unknown[0]
        raise FabricChoiceError(
            f"node {_cut(first.node)}: label {LABEL_FABRIC}={shorten(first.fabric, 60)} "
            f"names no known fabric profile"
            f"{suggestion(first.fabric, catalog.profiles) or f' ({catalog.known()})'}"
        )
    why = f"no node names a fabric; the default {default}"
    return FabricChoice(_get(catalog, default, "the default fabric"), why)


def _get(catalog: Catalog, name: str, where: str) -> FabricProfile:
    try:
        return catalog.get(name)
    except ProfileError as err:
        raise FabricChoiceError(f"{where}: {err}") from None


@dataclass(frozen=True)
class _Found:
    fabric: str
    node: str
    via: str  # "label" | "instance type <t>" | "default"


def _voters(nodes: list[NodeInfo]) -> list[NodeInfo]:
    """GPU nodes that can take pods, else every GPU node, else every node."""
    gpu_nodes = [n for n in nodes if n.gpus > 0]
    return [n for n in gpu_nodes if n.available] or gpu_nodes or nodes


def _node_fabrics(nodes: list[NodeInfo], catalog: Catalog) -> tuple[list[_Found], list[_Found]]:
    """(known, unknown): each voting node's fabric: its label, else its instance type's
    preset, else the fabric the snapshot gave it (the default for unlabelled nodes)."""
    known: list[_Found] = []
    unknown: list[_Found] = []
    for node in _voters(nodes):
        label = node.labels.get(LABEL_FABRIC)
        machine = instance_type_of(node.labels)
        preset = INSTANCE_PRESETS.get(machine or "")
        if label and label != AUTO_FABRIC and node.fabric == label:
            found = _Found(label, node.name, "label")
        elif preset is not None and preset in catalog:
            found = _Found(preset, node.name, f"instance type {machine}")
        elif node.fabric and node.fabric != AUTO_FABRIC:
            found = _Found(node.fabric, node.name, "default")
        else:
            continue
        (known if found.fabric in catalog else unknown).append(found)
    return known, unknown


def _majority(known: list[_Found], unknown: list[_Found], catalog: Catalog) -> FabricChoice:
    votes = Counter(f.fabric for f in known)
    ranked = sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))
    name, count = ranked[0]
    how = _how(sorted({f.via for f in known if f.fabric == name}), name)
    reason = f"{how} on {count} of {_count(len(known) + len(unknown), 'node')}"
    if len(ranked) > 1:
        others = ", ".join(f"{n} on {c}" for n, c in ranked[1:4])
        reason += f"; the nodes are of {len(ranked)} fabrics (also {others}), priced as {name}"
    return FabricChoice(catalog.get(name), reason + _ignored(unknown))


def _ignored(unknown: list[_Found]) -> str:
    if not unknown:
        return ""
    first = unknown[0]
    more = f" and {len(unknown) - 1} more" if len(unknown) > 1 else ""
    return (
        f" (ignored: {LABEL_FABRIC}={shorten(first.fabric, 60)} on node "
        f"{_cut(first.node)}{more}, no such profile)"
    )


def _cut(name: str, limit: int = 63) -> str:
    return name if len(name) <= limit else name[: limit - 3] + "..."


def _how(vias: list[str], name: str) -> str:
    labels = "label" in vias
    machines = [v.removeprefix("instance type ") for v in vias if v != "label"]
    defaults = "default" in vias
    machines = [m for m in machines if m != "default"]
    if defaults and not labels and not machines:
        return f"unlabelled nodes are of the default fabric {name}"
    if labels and not machines:
        return f"node label {LABEL_FABRIC}={name}"
    shown = ", ".join(machines[:3]) + (", ..." if len(machines) > 3 else "")
    if not labels:
        return f"instance type {shown} maps to preset {name}"
    return f"node label {LABEL_FABRIC}={name} and instance type {shown}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
