"""Placing a served model: replicas as blocks, spread over a tier, kept near their partner (pure).

Theory of operation
-------------------
A served model's data-parallel ranks never all-reduce, so its *blocks* (``candidates``) are its
replicas — the pods joined by tensor, expert and pipeline groups — not a training step's
stages. A replica that fits one NVLink domain is one *unit* (every unit lands inside one
domain: the whole replica rides NVLink); one that does not keeps its tensor groups as units,
and its block is packed into one leaf domain on the fewest nodes, so its pipeline and expert
traffic crosses the fewest domains and rails. When the cluster holds the job only in smaller
pieces the ladder steps down: whole replicas, tensor groups, then (``tensor: Preferred``)
single pods (:func:`block_ladder`).

Two more candidates join the search's own (``search``):

* **spread** (``serving.spread``: RailGroup, Spine or Rack) — replicas one at a time, each into
  the domain of that tier holding the fewest replicas so far that has room for it whole
  (a water-fill: the fewest replicas per domain the free slots allow), each replica packed
  inside it as the search packs a block. The most replicas one domain gets there is the
  spread every plan must meet: the ``replica-spread`` plugin rejects any candidate that crowds
  a domain more (:class:`SpreadGoal`);
* **paired** (the side of a disaggregated deployment planned second) — each replica into free
  slots of the NVLink domains of the partner ranks it exchanges KV cache with, else their rail
  groups (one leaf hop on the same rail), else their spines, else anywhere: the transfer rides
  NVLink, or the fewest switch hops, where capacity allows. The cost model prices the transfer,
  so the search keeps this candidate only when it is cheaper.

Both place replicas through :class:`BlockPlacer`, which packs one block at a time
(``candidates.pack_blocks``) into the free slots a predicate keeps.

A third is the peer's: Kueue admits a LeaderWorkerSet one group at a time, each group a Workload
of its own (``sigs.k8s.io/kueue@v0.19.2/pkg/controller/jobs/leaderworkerset``), so
:func:`replica_bestfit` places each replica in turn by Kueue TAS BestFit
(``peers.kueue_bestfit``) at the level a careful user requires it (:func:`careful_level`: one
node when it fits one, one rack when the racks are NVLink domains that hold it, else one rail
group) on the slots the earlier replicas left. The search counts it among the Kueue candidates,
so a served model's plan never predicts more communication than that.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot, NodeInfo
from fabricfit.placement.candidates import Block, PlanCandidate, job_blocks, pack_blocks
from fabricfit.placement.feasibility import max_domain_gpus
from fabricfit.placement.layout import RankLayout
from fabricfit.placement.pairing import kv_transfer, partner_slots
from fabricfit.placement.peers import kueue_bestfit
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.slots import LeafDomain, PodSlot, leaf_key

#: Groups that join a served model's pods into one replica.
SERVING_BLOCK_KINDS = ("tensor", "context", "expert", "pipeline")
SPREAD_LABEL = "spread replicas"
PAIRED_LABEL = "replicas next to their partner"


def level_of(spread: str) -> Callable[[PodSlot], str]:
    """The key of a slot's domain at a spread tier (a rail group: its leaf domain when the
    node has no rail-group label, as ``slots.leaf_key`` does)."""
    keys: dict[str, Callable[[PodSlot], str]] = {
        "Rack": lambda s: s.rack,
        "RailGroup": lambda s: s.leaf,
        "Spine": lambda s: s.spine,
    }
    return keys[spread]


def block_ladder(
    request: PlacementRequest, layout: RankLayout, max_domain_gpus: int | None
) -> Iterator[tuple[Block, ...]]:
    """The block cuts to try, widest units first (module docstring; training: the stage
    blocks with tensor units, then single pods for ``tensor: Preferred``)."""
    if request.serving is None:
        yield job_blocks(layout)
        if not request.tensor_required:
            yield job_blocks(layout, keep_units=False)
        return
    kinds = SERVING_BLOCK_KINDS
    if max_domain_gpus is None or _replica_gpus(layout) <= max_domain_gpus:
        yield job_blocks(layout, block_kinds=kinds, unit_kinds=kinds)
    yield job_blocks(layout, block_kinds=kinds)
    if not request.tensor_required:
        yield job_blocks(layout, block_kinds=kinds, keep_units=False)


def _replica_gpus(layout: RankLayout) -> int:
    radix = layout.radix
    return radix["tp"] * radix["cp"] * radix["ep"] * radix["pp"]


class BlockPlacer:
    """Places blocks one at a time into the free slots of ``domains`` (slots are consumed)."""

    def __init__(self, domains: Sequence[LeafDomain], pods: int) -> None:
        self.domains = tuple(domains)
        self.pods = pods
        self.taken: set[PodSlot] = set()
        self.placed: dict[int, PodSlot] = {}

    def place(self, block: Block, keep: Callable[[PodSlot], bool]) -> tuple[PodSlot, ...] | None:
        """Pack ``block`` into the free slots ``keep`` accepts; its slots, or None (no room)."""
        pools = []
        for domain in self.domains:
            free = tuple(s for s in domain.slots if s not in self.taken and keep(s))
            if free:
                pools.append(LeafDomain(domain.key, domain.spine, domain.has_rails, free))
        pods = [pod for unit in block for pod in unit]
        local = {pod: i for i, pod in enumerate(pods)}
        renumbered = tuple(tuple(local[p] for p in unit) for unit in block)
        slots = pack_blocks((renumbered,), pools, "node", "best-fit") if pools else None
        if slots is None:
            return None
        for pod, slot in zip(pods, slots, strict=True):
            self.placed[pod] = slot
            self.taken.add(slot)
        return slots

    def assignment(self) -> tuple[PodSlot, ...] | None:
        if len(self.placed) != self.pods:
            return None
        return tuple(self.placed[p] for p in range(self.pods))


def careful_level(request: PlacementRequest, nodes: Sequence[NodeInfo]) -> str:
    """The finest Kueue TAS level a careful user requires one replica in (module docstring)."""
    p = request.parallelism
    replica = p.tensor * p.pipeline * p.expert * p.context
    if replica <= max((n.gpus for n in nodes), default=0):
        return "hostname"
    racks_are_domains = any(n.place.nvlink_domain not in ("", n.name) for n in nodes)
    if racks_are_domains and replica <= (max_domain_gpus(nodes) or 0):
        return "rack"
    return "rail-group"


def replica_bestfit(
    blocks: Sequence[Block], domains: Sequence[LeafDomain], level: str
) -> tuple[PodSlot, ...] | None:
    """Each replica (block) in turn by Kueue TAS BestFit at ``level`` on the slots left."""
    taken: set[PodSlot] = set()
    placed: dict[int, PodSlot] = {}
    for block in blocks:
        pods = [pod for unit in block for pod in unit]
        free = [
            LeafDomain(d.key, d.spine, d.has_rails, tuple(s for s in d.slots if s not in taken))
            for d in domains
        ]
        slots = kueue_bestfit([d for d in free if d.slots], len(pods), level=level)
        if slots is None:
            return None
        placed.update(zip(pods, slots, strict=True))
        taken.update(slots)
    return tuple(placed[p] for p in range(len(placed)))


@dataclass(frozen=True, slots=True)
class SpreadGoal:
    """What spreading achieved: at most ``limit`` replicas in one domain of ``spread``'s tier,
    over ``domains`` domains (what the ``replica-spread`` plugin holds every candidate to)."""

    spread: str
    limit: int
    domains: int


def spread_candidate(
    blocks: Sequence[Block], domains: Sequence[LeafDomain], spread: str
) -> tuple[PlanCandidate, SpreadGoal] | None:
    """Replicas water-filled over the tier's domains (module docstring); None when they do
    not fit that way."""
    level = level_of(spread)
    placer = BlockPlacer(domains, sum(len(u) for b in blocks for u in b))
    load: dict[str, int] = dict.fromkeys(sorted({level(s) for d in domains for s in d.slots}), 0)
    for block in blocks:
        slots = None
        for key in sorted(load, key=lambda k: (load[k], k)):
            slots = placer.place(block, _at(level, key))
            if slots is not None:
                break
        slots = slots or placer.place(block, _anywhere)
        if slots is None:
            return None
        for key in {level(s) for s in slots}:
            load[key] += 1
    found = placer.assignment()
    if found is None:
        return None
    used = sum(1 for n in load.values() if n)
    goal = SpreadGoal(spread, max(load.values(), default=0), used)
    return PlanCandidate(label=f"{SPREAD_LABEL} over {spread}", slots=found), goal


def _at(level: Callable[[PodSlot], str], key: str) -> Callable[[PodSlot], bool]:
    return lambda slot: level(slot) == key


def _among(attribute: str, values: set[str]) -> Callable[[PodSlot], bool]:
    return lambda slot: getattr(slot, attribute) in values


def _anywhere(slot: PodSlot) -> bool:
    return True


def replica_loads(
    replicas: Sequence[Sequence[int]], slots: Sequence[PodSlot], spread: str
) -> Mapping[str, int]:
    """Replicas touching each domain of the tier (a replica across two counts in both)."""
    level = level_of(spread)
    load: dict[str, int] = {}
    for pods in replicas:
        for key in {level(slots[p]) for p in pods}:
            load[key] = load.get(key, 0) + 1
    return load


def paired_candidate(
    blocks: Sequence[Block],
    domains: Sequence[LeafDomain],
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    layout: RankLayout,
) -> PlanCandidate | None:
    """Each replica next to the partner ranks it exchanges KV cache with (module docstring);
    None without a located partner or room."""
    near = _partner_places(snapshot, request, layout)
    if near is None:
        return None
    placer = BlockPlacer(domains, layout.pods)
    g = layout.gpus_per_pod
    for block in blocks:
        ranks = [pod * g + j for unit in block for pod in unit for j in range(g)]
        found = [near[r] for r in ranks if r in near]
        tiers = [
            _among("nvlink_domain", {p.nvlink_domain for p in found}),
            _among("leaf", {p.leaf for p in found}),
            _among("spine", {p.spine for p in found}),
            _anywhere,
        ]
        if not any(placer.place(block, keep) is not None for keep in tiers):
            return None
    slots = placer.assignment()
    return None if slots is None else PlanCandidate(label=PAIRED_LABEL, slots=slots)


@dataclass(frozen=True, slots=True)
class _Place:
    nvlink_domain: str
    leaf: str
    spine: str


def _partner_places(
    snapshot: ClusterSnapshot, request: PlacementRequest, layout: RankLayout
) -> dict[int, _Place] | None:
    """Per rank of this job, where the partner rank of its first KV shard sits."""
    partner, serving = request.partner, request.serving
    if partner is None or serving is None:
        return None
    located = partner_slots(snapshot, partner)
    transfer = kv_transfer(layout, request.model, serving, partner)
    if located is None or transfer is None:
        return None
    world = layout.world_size
    out: dict[int, _Place] = {}
    for a, b in transfer.pairs:
        mine, theirs = (a, b) if a < world else (b, a)
        if mine not in out:
            out[mine] = _place_of(snapshot, located[theirs - world])
    return out


def _place_of(snapshot: ClusterSnapshot, slot: GpuSlot) -> _Place:
    node = snapshot.node(slot.node)
    return _Place(slot.nvlink_domain or slot.node, leaf_key(node)[0], slot.spine)
