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

Step 1 is most of the cost on a large cluster (about 0.4 ms a node) and nodes rarely change, so
a caller that builds snapshots again and again passes a :class:`FactsMemo`: a node dict equal to
the one read last time under the same name (with the same DRA GPU count) gets the same facts and
diagnostics back (an equality test of plain dicts is far cheaper than reading them), and with
them the same place and, at the same usage, the same ``NodeInfo``.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabricfit.api.constants import DRA_NIC_DRIVER
from fabricfit.fabric.claims import ClaimHolds, read_claim_holds
from fabricfit.fabric.devices import DeviceMap, build_device_map
from fabricfit.fabric.nodes import NodeFacts, read_node_facts
from fabricfit.fabric.objects import shorten, str_at
from fabricfit.fabric.places import check_domain_spans, check_overlay, qualify
from fabricfit.fabric.pods import Usage, gpus_in_use, pod_usage
from fabricfit.fabric.resourceslices import DraInventory, read_resource_slices
from fabricfit.fabric.schemes import AUTO, NAMES, NodeReading, Resolution, read_node, resolve
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
    ``kubectl get … -o json``). ``scheme`` is one of the scheme ``NAMES``; an unknown name is
    reported and treated as ``auto``. ``default_fabric`` is the fabric of nodes without a
    ``topology.fabricfit.dev/fabric`` label. The snapshot's ``scheme`` is the resolved name:
    under ``auto``, ``native`` when any node carries native tier labels (a detected provider
    scheme then fills the levels they leave out), else the detected provider, else ``native``
    (no topology labels at all: native defaults apply). ``resource_slices``/``resource_claims``
    are ResourceSlice/ResourceClaim objects (step 5 of the module docstring).
    """
    dra = (resource_slices, resource_claims)
    return _build(nodes, pods, None, scheme=scheme, default_fabric=default_fabric, dra=dra)


def _build(
    nodes: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    memo: FactsMemo | None,
    *,
    scheme: str,
    default_fabric: str | None,
    dra: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]],
) -> ClusterSnapshot:
    memo = memo if memo is not None else FactsMemo()
    resource_slices, resource_claims = dra
    diagnostics: list[Diagnostic] = []
    inventory, holds, devices = _read_dra(resource_slices, resource_claims, diagnostics)
    facts = _collect_facts(nodes, default_fabric, diagnostics, inventory.gpus_by_node(), memo)
    if scheme not in NAMES:
        message = f"unknown label scheme {shorten(scheme)}; detecting it (auto)"
        diagnostics.append(Diagnostic(node="", message=message, severity="error"))
        scheme = AUTO
    layout = memo.layout(scheme, facts)
    diagnostics.extend(layout.diagnostics)
    used = memo.usage(pods, diagnostics)
    if holds.by_node:
        for f in facts:
            if f.dra and holds.by_node.get(f.name):
                used[f.name] = used.get(f.name, 0) + holds.by_node[f.name]
    places = layout.places
    infos = tuple(memo.info(f, places[f.name], used.get(f.name, 0), diagnostics) for f in facts)
    ordered = sorted(dict.fromkeys(diagnostics), key=lambda d: (d.node, d.message, d.severity))
    built = ClusterSnapshot(
        nodes=infos,
        scheme=layout.resolution.name,
        diagnostics=tuple(ordered),
        claimed_by_pod=holds.by_pod,
        devices=devices,
    )
    return memo.snapshot(built, layout)


@dataclass(frozen=True)
class Layout:
    """Steps 2 and 3 for a list of nodes: the resolved scheme, each node's place by name, and
    the diagnostics of reading their labels and of the checks across nodes."""

    resolution: Resolution
    places: Mapping[str, FabricPlace]
    diagnostics: tuple[Diagnostic, ...]


def lay_out(
    scheme: str,
    facts: Sequence[NodeFacts],
    place: Callable[[Resolution, NodeFacts], tuple[NodeReading, FabricPlace]],
) -> Layout:
    resolution = resolve(scheme, [f.labels for f in facts])
    readings: dict[str, NodeReading] = {}
    places: dict[str, FabricPlace] = {}
    found: list[Diagnostic] = []
    for f in facts:
        reading, where = place(resolution, f)
        readings[f.name], places[f.name] = reading, where
        found.extend(Diagnostic(node=f.name, message=p) for p in reading.problems)
    found.extend(check_domain_spans(readings, places))
    if resolution.native and resolution.provider is not None:
        found.extend(check_overlay(readings, resolution.provider.name))
    return Layout(resolution, places, tuple(found))


def _read_dra(
    slices: object, claims: object, diagnostics: list[Diagnostic]
) -> tuple[DraInventory, ClaimHolds, DeviceMap | None]:
    if not slices:
        holds = read_claim_holds(claims) if claims else ClaimHolds()
        diagnostics.extend(holds.diagnostics)
        return DraInventory(), holds, None
    inventory = read_resource_slices(slices)
    nics = read_resource_slices(slices, DRA_NIC_DRIVER)
    holds = read_claim_holds(claims, inventory) if claims else ClaimHolds()
    diagnostics.extend(inventory.diagnostics)
    diagnostics.extend(nics.diagnostics)
    diagnostics.extend(holds.diagnostics)
    devices = build_device_map(inventory, nics, holds.allocated)
    return inventory, holds, (devices if devices.nodes else None)


#: (private copy of the node dict, default fabric, DRA GPUs, facts, diagnostics, the dict itself)
Entry = tuple[Any, str | None, int | None, NodeFacts, tuple[Diagnostic, ...], object]


class FactsMemo:
    """The facts (and diagnostics) of the nodes one build read, by name, with a private copy of
    each node dict to compare the next build's against; plus each node's reading, place and
    ``NodeInfo`` for those facts, the layout of the last list of facts and the last snapshot
    (returned again while nothing in it changed). Entries of nodes a build did not see are
    dropped, so it holds one cluster's nodes at most.

    ``trust_identity``: the caller never changes a node or pod dict in place once a build has
    read it (the operator's mirrors and indexes replace an object on every event). A dict seen
    before is then taken as unchanged without comparing it, and each pod's GPUs are kept too, so
    a build of an unchanged cluster costs a lookup per object. Without it, equal copies are
    recognised (a comparison per node) and pods are read every time."""

    def __init__(self, *, trust_identity: bool = False) -> None:
        self.trust_identity = trust_identity
        self._entries: dict[str, Entry] = {}
        self._next: dict[str, Entry] = {}
        self._by_id: dict[int, Entry] = {}
        self._changed = True  # a build read a node it did not hold as it was
        self._places: dict[str, tuple[NodeFacts, Resolution, NodeReading, FabricPlace]] = {}
        self._infos: dict[str, tuple[NodeFacts, FabricPlace, int, NodeInfo]] = {}
        self._layout: tuple[str, Sequence[NodeFacts], Layout] | None = None
        self._pods: dict[int, tuple[object, Usage]] = {}
        self._snapshot: ClusterSnapshot | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def build_snapshot(
        self,
        nodes: Sequence[Mapping[str, Any]],
        pods: Sequence[Mapping[str, Any]] = (),
        *,
        scheme: str = AUTO,
        default_fabric: str | None = None,
        resource_slices: Sequence[Mapping[str, Any]] = (),
        resource_claims: Sequence[Mapping[str, Any]] = (),
    ) -> ClusterSnapshot:
        """``build_snapshot`` reusing what earlier builds through this memo read."""
        dra = (resource_slices, resource_claims)
        return _build(nodes, pods, self, scheme=scheme, default_fabric=default_fabric, dra=dra)

    def read(
        self,
        raw: object,
        index: int,
        default_fabric: str | None,
        diagnostics: list[Diagnostic],
        dra_gpus: Mapping[str, int],
    ) -> NodeFacts | None:
        seen = self._by_id.get(id(raw)) if self.trust_identity else None
        if seen is not None and seen[5] is raw and _same_inputs(seen, default_fabric, dra_gpus):
            self._next[seen[3].name] = seen
            diagnostics.extend(seen[4])
            return seen[3]
        self._changed = True
        name = str_at(raw, "metadata", "name")
        dra = dra_gpus.get(name) if name else None
        hit = self._entries.get(name) if name else None
        if hit is not None and hit[1] == default_fabric and hit[2] == dra and hit[0] == raw:
            self._next[hit[3].name] = (*hit[:5], raw)
            diagnostics.extend(hit[4])
            return hit[3]
        own: list[Diagnostic] = []
        facts = read_node_facts(raw, index, default_fabric, own, dra_gpus)
        diagnostics.extend(own)
        if facts is not None and facts.name == name:
            self._next[name] = (copy.deepcopy(raw), default_fabric, dra, facts, tuple(own), raw)
        return facts

    def place(self, resolution: Resolution, facts: NodeFacts) -> tuple[NodeReading, FabricPlace]:
        """The node's reading and place under ``resolution``, reused for the same facts."""
        hit = self._places.get(facts.name)
        if hit is not None and hit[0] is facts and hit[1] == resolution:
            return hit[2], hit[3]
        reading, place = _place(resolution, facts)
        self._places[facts.name] = (facts, resolution, reading, place)
        return reading, place

    def layout(self, scheme: str, facts: Sequence[NodeFacts]) -> Layout:
        """``lay_out`` of ``facts``, reused while the list holds the same facts objects."""
        last = self._layout
        if last is not None and last[0] == scheme and _same_objects(last[1], facts):
            return last[2]
        layout = lay_out(scheme, facts, self.place)
        self._layout = (scheme, facts, layout)
        return layout

    def usage(self, pods: Sequence[Any], diagnostics: list[Diagnostic]) -> dict[str, int]:
        """``gpus_in_use``; with ``trust_identity``, a pod dict seen before is not read again."""
        if not self.trust_identity or not isinstance(pods, Sequence) or isinstance(pods, str):
            return gpus_in_use(pods, diagnostics)
        used: dict[str, int] = {}
        seen: dict[int, tuple[object, Usage]] = {}
        known = self._pods
        for pod in pods:
            hit = known.get(id(pod))
            if hit is None or hit[0] is not pod:
                hit = (pod, pod_usage(pod))
            seen[id(pod)] = hit
            node, gpus, problems = hit[1]
            diagnostics.extend(problems)
            if node is not None and gpus:
                used[node] = used.get(node, 0) + gpus
        self._pods = seen
        return used

    def info(
        self, facts: NodeFacts, place: FabricPlace, used_gpus: int, diagnostics: list[Diagnostic]
    ) -> NodeInfo:
        """The node's ``NodeInfo``, the same object while facts, place and usage are."""
        hit = self._infos.get(facts.name)
        if hit is not None and hit[0] is facts and hit[1] is place and hit[2] == used_gpus:
            if used_gpus > facts.gpus:
                _node_info(facts, place, used_gpus, diagnostics)  # its diagnostic again
            return hit[3]
        info = _node_info(facts, place, used_gpus, diagnostics)
        self._infos[facts.name] = (facts, place, used_gpus, info)
        return info

    def snapshot(self, built: ClusterSnapshot, layout: Layout) -> ClusterSnapshot:
        """The last snapshot when ``built`` holds the same ``NodeInfo`` objects and equals it
        otherwise (so what callers keep per snapshot object stays valid), else ``built`` with
        ``layout`` as its facts token: the layout is reused exactly while the facts are."""
        last = self._snapshot
        if (
            last is not None
            and _same_objects(last.nodes, built.nodes)
            and (last.scheme, last.diagnostics) == (built.scheme, built.diagnostics)
            and last.claimed_by_pod == built.claimed_by_pod
            and last.devices == built.devices
        ):
            return last
        object.__setattr__(built, "_facts_token", layout)
        self._snapshot = built
        return built

    def finish(self) -> None:
        """End of one facts pass: keep only the nodes it read."""
        changed = self._changed or len(self._next) != len(self._entries)
        self._entries, self._next, self._changed = self._next, {}, False
        if not changed:
            return
        if self.trust_identity:
            self._by_id = {id(e[5]): e for e in self._entries.values()}
        self._places = {k: v for k, v in self._places.items() if k in self._entries}
        self._infos = {k: v for k, v in self._infos.items() if k in self._entries}


def _same_inputs(entry: Entry, default_fabric: str | None, dra_gpus: Mapping[str, int]) -> bool:
    return entry[1] == default_fabric and entry[2] == dra_gpus.get(entry[3].name)


def _same_objects(first: Sequence[object], second: Sequence[object]) -> bool:
    return len(first) == len(second) and all(map(operator.is_, first, second))


def _place(resolution: Resolution, facts: NodeFacts) -> tuple[NodeReading, FabricPlace]:
    reading = read_node(resolution, facts.labels)
    return reading, qualify(reading.tiers, facts.name)


def _collect_facts(
    nodes: object,
    default_fabric: str | None,
    diagnostics: list[Diagnostic],
    dra_gpus: Mapping[str, int],
    memo: FactsMemo,
) -> list[NodeFacts]:
    """Validated facts of every usable node, sorted by name, first copy of a name wins."""
    if isinstance(nodes, Mapping | str | bytes) or not isinstance(nodes, Iterable):
        message = "nodes is not a list; no nodes read"
        diagnostics.append(Diagnostic(node="", message=message, severity="error"))
        return []
    by_name: dict[str, NodeFacts] = {}
    for index, raw in enumerate(nodes):
        facts = memo.read(raw, index, default_fabric, diagnostics, dra_gpus)
        if facts is None:
            continue
        if facts.name in by_name:
            message = f"duplicate node (nodes[{index}]); the first copy is used"
            diagnostics.append(Diagnostic(node=facts.name, message=message))
            continue
        by_name[facts.name] = facts
    memo.finish()
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
