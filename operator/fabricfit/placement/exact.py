"""Exact optimum for small clusters: exhaustive pod→slot search up to node symmetry.

Theory of operation
-------------------
For clusters of at most 16 eligible nodes we can afford to price every distinct placement, which
is how the tests show that the heuristic search finds the optimum (or comes within 2 %). Pods are
placed in index order by depth-first search over the free pod slots. Nodes that look the same to
the cost model — same spine, rail group, rack, shared NVLink domain, GPU count, free GPUs and
rails — are interchangeable, so among unopened nodes of one such *class* only the first may be
opened next (the standard symmetry break for identical bins); opened nodes are always tried.
Every complete placement passes the same plugin filters as the heuristic and is priced by the
same cost model; the objective is the predicted step communication time, ties broken by the
weighted plugin score, then by enumeration order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, NodeInfo
from fabricfit.placement.constraints import NO_RESERVATIONS, eligible_nodes, free_after_reservations
from fabricfit.placement.costing import StepModel
from fabricfit.placement.feasibility import max_domain_gpus
from fabricfit.placement.layout import build_layout, validate_layout
from fabricfit.placement.plugins import DEFAULT_PLUGINS, PlanContext
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.scoring import Scored, Scorer
from fabricfit.placement.slots import PodSlot, build_leaf_domains, node_slots, node_sort_key

MAX_EXACT_NODES = 16
MAX_EXACT_EVALUATIONS = 200_000


class ExactSearchTooLargeError(ValueError):
    """The instance is beyond what exhaustive search is meant for."""


@dataclass(frozen=True, slots=True)
class ExactResult:
    best: Scored | None
    evaluations: int

    @property
    def seconds(self) -> float | None:
        return None if self.best is None else self.best.predicted_seconds


def _node_class(node: NodeInfo, reservations: Mapping[str, int]) -> tuple[object, ...]:
    place = node.place
    shared = place.nvlink_domain if place.nvlink_domain not in ("", node.name) else "-"
    free = free_after_reservations(node, reservations)
    return (place.spine, place.rail_group, place.rack, shared, node.gpus, free, node.rails)


class _Search:
    def __init__(
        self,
        scorer: Scorer,
        nodes: list[NodeInfo],
        slots: dict[str, list[PodSlot]],
        classes: dict[str, tuple[object, ...]],
        pods: int,
        *,
        limit: int,
    ) -> None:
        self.scorer = scorer
        self.nodes = nodes
        self.slots = slots
        self.classes = classes
        self.pods = pods
        self.limit = limit
        self.evaluations = 0
        self.best: Scored | None = None
        self.chosen: list[PodSlot] = []
        self.used: set[PodSlot] = set()
        self.opened: set[str] = set()

    def run(self) -> None:
        if len(self.chosen) == self.pods:
            self._leaf()
            return
        blocked: set[tuple[object, ...]] = set()
        for node in self.nodes:
            if node.name not in self.opened:
                cls = self.classes[node.name]
                if cls in blocked:
                    continue
                blocked.add(cls)
            for slot in self.slots[node.name]:
                if slot not in self.used:
                    self._push(slot)
                    self.run()
                    self._pop(slot)

    def _push(self, slot: PodSlot) -> None:
        self.chosen.append(slot)
        self.used.add(slot)
        self.opened.add(slot.node)

    def _pop(self, slot: PodSlot) -> None:
        self.chosen.pop()
        self.used.discard(slot)
        if not any(s.node == slot.node for s in self.chosen):
            self.opened.discard(slot.node)

    def _leaf(self) -> None:
        self.evaluations += 1
        if self.evaluations > self.limit:
            raise ExactSearchTooLargeError(f"more than {self.limit} placements to price")
        result = self.scorer.evaluate("exact", tuple(self.chosen))
        if not isinstance(result, Scored):
            return
        if self.best is None or _exact_key(result) < _exact_key(self.best):
            self.best = result


def _exact_key(scored: Scored) -> tuple[float, float]:
    return (round(scored.predicted_seconds, 15), -round(scored.total, 9))


def exact_optimum(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    *,
    reservations: Mapping[str, int] = NO_RESERVATIONS,
    max_nodes: int = MAX_EXACT_NODES,
    max_evaluations: int = MAX_EXACT_EVALUATIONS,
) -> ExactResult:
    """The placement with the least predicted step communication time (None: infeasible)."""
    invalid = validate_layout(
        request.parallelism,
        request.gpus_per_pod,
        experts=request.model.experts,
        max_domain_gpus=max_domain_gpus(snapshot.nodes),
        tensor_required=request.tensor_required,
    )
    if invalid:
        return ExactResult(best=None, evaluations=0)
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    eligible, _ = eligible_nodes(snapshot, request, reservations)
    if len(eligible) > max_nodes:
        raise ExactSearchTooLargeError(
            f"{len(eligible)} eligible nodes; exact search takes ≤ {max_nodes}"
        )
    nodes = sorted(eligible, key=node_sort_key)
    slots = {n.name: node_slots(n, request.gpus_per_pod, reservations) for n in nodes}
    classes = {n.name: _node_class(n, reservations) for n in nodes}
    domains = build_leaf_domains(nodes, request.gpus_per_pod, reservations)
    model = StepModel(snapshot, layout, request, profile)
    ctx = PlanContext(
        request=request, layout=layout, domains=domains, lower_bound=model.lower_bound()
    )
    scorer = Scorer(ctx, DEFAULT_PLUGINS, model)
    search = _Search(scorer, nodes, slots, classes, layout.pods, limit=max_evaluations)
    search.run()
    return ExactResult(best=search.best, evaluations=search.evaluations)
