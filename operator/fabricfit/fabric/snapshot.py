"""Build the frozen :class:`ClusterSnapshot` from plain Node and Pod dicts (pure).

Theory of operation
-------------------
One pass per concern, each tolerant of any input shape:

1. :mod:`~fabricfit.fabric.nodes` turns every Node dict into validated facts (name, labels,
   GPUs, rails, fabric, availability, taints); nameless or duplicate nodes are skipped.
2. The label scheme is resolved once for the whole cluster (``auto`` looks at every node's
   keys), and each node's labels are read into raw tiers, then qualified by their parents.
3. Checks that need several nodes run on the result: an NVLink domain spanning rail groups, and
   native labels grouping nodes differently from the provider's labels.
4. :mod:`~fabricfit.fabric.pods` sums the GPUs held by non-terminal pods bound to each node.
5. Dynamic Resource Allocation, when ResourceSlices are given: a node without
   ``nvidia.com/gpu`` allocatable takes its GPUs from the slices
   (:mod:`~fabricfit.fabric.resourceslices`), and the devices allocated ResourceClaims hold on
   it count as used (:mod:`~fabricfit.fabric.claims`) next to the pods' requests (pods that
   claim GPUs request no ``nvidia.com/gpu``, so nothing counts twice).

Problems never raise; they become :class:`Diagnostic`\\ s, sorted so that the same cluster gives
the same snapshot whatever order the API server listed it in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fabricfit.api.constants import LABEL_SCHEMES
from fabricfit.fabric.claims import ClaimHolds, read_claim_holds
from fabricfit.fabric.nodes import NodeFacts, read_node_facts
from fabricfit.fabric.objects import shorten
from fabricfit.fabric.places import check_domain_spans, check_overlay, qualify
from fabricfit.fabric.pods import gpus_in_use
from fabricfit.fabric.resourceslices import DraInventory, read_resource_slices
from fabricfit.fabric.schemes import AUTO, read_node, resolve
from fabricfit.fabric.topology import ClusterSnapshot, Diagnostic, FabricPlace, NodeInfo


def build_snapshot(
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]] = (),
    *,
    scheme: str = AUTO,
    default_fabric: str | None = None,
    resource_slices: Sequence[Mapping[str, Any]] = (),
    resource_claims: Sequence[Mapping[str, Any]] = (),
) -> ClusterSnapshot:
    """The cluster as the placement engine sees it; never raises on malformed input.

    ``nodes``/``pods`` are Node/Pod objects as the API server returns them (``items`` of
    ``kubectl get … -o json``). ``scheme`` is one of ``LABEL_SCHEMES``; an unknown name is
    reported and treated as ``auto``. ``default_fabric`` is the fabric of nodes without a
    ``topology.fabricfit.dev/fabric`` label. The snapshot's ``scheme`` is the resolved name:
    under ``auto``, ``native`` when any node carries native tier labels (a detected provider
    scheme then fills the levels they leave out), else the detected provider, else ``native``
    (no topology labels at all: native defaults apply). ``resource_slices``/``resource_claims``
    are ResourceSlice/ResourceClaim objects (step 5 of the module docstring).
    """
    diagnostics: list[Diagnostic] = []
    inventory, holds = _read_dra(resource_slices, resource_claims, diagnostics)
    facts = _collect_facts(nodes, default_fabric, diagnostics, inventory.gpus_by_node())
    if scheme not in LABEL_SCHEMES:
        message = f"unknown label scheme {shorten(scheme)}; detecting it (auto)"
        diagnostics.append(Diagnostic(node="", message=message, severity="error"))
        scheme = AUTO
    resolution = resolve(scheme, [f.labels for f in facts])
    readings = {f.name: read_node(resolution, f.labels) for f in facts}
    places: dict[str, FabricPlace] = {}
    for name, reading in readings.items():
        places[name] = qualify(reading.tiers, name)
        diagnostics.extend(Diagnostic(node=name, message=p) for p in reading.problems)
    diagnostics.extend(check_domain_spans(readings, places))
    if resolution.native and resolution.provider is not None:
        diagnostics.extend(check_overlay(readings, resolution.provider.name))
    used = gpus_in_use(pods, diagnostics)
    for f in facts:
        if f.dra and holds.by_node.get(f.name):
            used[f.name] = used.get(f.name, 0) + holds.by_node[f.name]
    infos = tuple(_node_info(f, places[f.name], used.get(f.name, 0), diagnostics) for f in facts)
    ordered = sorted(dict.fromkeys(diagnostics), key=lambda d: (d.node, d.message, d.severity))
    return ClusterSnapshot(
        nodes=infos,
        scheme=resolution.name,
        diagnostics=tuple(ordered),
        claimed_by_pod=holds.by_pod,
    )


def _read_dra(
    slices: object, claims: object, diagnostics: list[Diagnostic]
) -> tuple[DraInventory, ClaimHolds]:
    inventory = read_resource_slices(slices) if slices else DraInventory()
    holds = read_claim_holds(claims, inventory) if claims else ClaimHolds()
    diagnostics.extend(inventory.diagnostics)
    diagnostics.extend(holds.diagnostics)
    return inventory, holds


def _collect_facts(
    nodes: object,
    default_fabric: str | None,
    diagnostics: list[Diagnostic],
    dra_gpus: Mapping[str, int],
) -> list[NodeFacts]:
    """Validated facts of every usable node, sorted by name, first copy of a name wins."""
    if isinstance(nodes, Mapping | str | bytes) or not isinstance(nodes, Iterable):
        message = "nodes is not a list; no nodes read"
        diagnostics.append(Diagnostic(node="", message=message, severity="error"))
        return []
    by_name: dict[str, NodeFacts] = {}
    for index, raw in enumerate(nodes):
        facts = read_node_facts(raw, index, default_fabric, diagnostics, dra_gpus)
        if facts is None:
            continue
        if facts.name in by_name:
            message = f"duplicate node (nodes[{index}]); the first copy is used"
            diagnostics.append(Diagnostic(node=facts.name, message=message))
            continue
        by_name[facts.name] = facts
    return [by_name[name] for name in sorted(by_name)]


def _node_info(
    facts: NodeFacts, place: FabricPlace, used_gpus: int, diagnostics: list[Diagnostic]
) -> NodeInfo:
    if used_gpus > facts.gpus:
        message = (
            f"pods hold {used_gpus} GPUs but the node has {facts.gpus} allocatable; "
            "treating it as full"
        )
        diagnostics.append(Diagnostic(node=facts.name, message=message))
    return NodeInfo(
        name=facts.name,
        gpus=facts.gpus,
        free_gpus=max(0, facts.gpus - used_gpus),
        rails=facts.rails,
        place=place,
        available=facts.available,
        unavailable_reason=facts.unavailable_reason,
        fabric=facts.fabric,
        labels=facts.labels,
        taints=facts.taints,
        dra=facts.dra,
        maintenance=facts.maintenance,
    )
