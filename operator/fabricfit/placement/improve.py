"""Local-move improvement of the best candidate: relocate one pod, or swap two.

Theory of operation
-------------------
Candidates come from a few coarse rules, so the best of them can still be off by a pod or two —
a data-parallel group with one member on the wrong rail window, a pipeline neighbour one leaf
away. Hill climbing fixes that: try moving one single-pod unit to a free slot, or swapping two
pods, keep the first move that improves the ``Scored.sort_key``, and start over, until no move
improves or the evaluation budget is spent. Free slots are deduplicated by *signature* (leaf
domain, rack, NVLink domain, GPU window, free windows on the node and whether the node already
hosts the job): slots that differ only in node name give the same score, so one representative
each keeps the neighbourhood small. Everything iterates in fixed order, so the
result is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from fabricfit.placement.scoring import Scored, Scorer
from fabricfit.placement.slots import LeafDomain, PodSlot

MAX_MOVE_EVALUATIONS = 400


def default_move_budget(pods: int) -> int:
    """Evaluations the local search may spend: generous for small jobs, none for large ones.

    On the benchmark clusters (benchmarks/placement.py) moves never improved a job of more than
    32 pods — its candidates already keep every block whole where the fabric allows — while
    each evaluation costs milliseconds, so large jobs skip them."""
    if pods <= 16:
        return MAX_MOVE_EVALUATIONS
    if pods <= 32:
        return 32
    return 0


def _signature(slot: PodSlot, job_nodes: set[str], windows: int) -> tuple[str, ...]:
    host = slot.node if slot.node in job_nodes else "-"
    domain = slot.nvlink_domain if slot.nvlink_domain != slot.node else "-"
    return (slot.leaf, slot.rack, domain, str(slot.gpus), host, str(windows))


def free_representatives(
    domains: Sequence[LeafDomain], used: Sequence[PodSlot]
) -> tuple[PodSlot, ...]:
    """One free slot per signature: leaf domains the job already uses first, then the other
    leaf domains of its spines (moves further away never beat the candidates' scopes)."""
    taken = set(used)
    job_nodes = {s.node for s in used}
    job_leaves = {s.leaf for s in used}
    job_spines = {s.spine for s in used}
    nearby = [d for d in domains if d.spine in job_spines]
    nearby.sort(key=lambda d: d.key not in job_leaves)
    windows: dict[str, int] = {}
    for domain in nearby:
        for slot in domain.slots:
            windows[slot.node] = windows.get(slot.node, 0) + 1
    seen: set[tuple[str, ...]] = set()
    reps: list[PodSlot] = []
    for domain in nearby:
        for slot in domain.slots:
            if slot in taken:
                continue
            sig = _signature(slot, job_nodes, windows[slot.node])
            if sig not in seen:
                seen.add(sig)
                reps.append(slot)
    return tuple(reps)


def _moves(
    current: tuple[PodSlot, ...], movable: Sequence[int], reps: Sequence[PodSlot]
) -> Iterator[tuple[str, tuple[PodSlot, ...]]]:
    for pod in movable:
        for slot in reps:
            moved = list(current)
            moved[pod] = slot
            yield f"move pod {pod}", tuple(moved)
    for i_index, i in enumerate(movable):
        for j in movable[i_index + 1 :]:
            if current[i].node == current[j].node and current[i].gpus == current[j].gpus:
                continue
            swapped = list(current)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            yield f"swap pods {i} and {j}", tuple(swapped)


def improve(
    scorer: Scorer,
    start: Scored,
    domains: Sequence[LeafDomain],
    movable: Sequence[int],
    budget: int,
) -> tuple[Scored, int]:
    """Hill-climb from ``start``; returns the best found and the evaluations spent."""
    best = start
    spent = 0
    improved = True
    while improved and spent < budget:
        improved = False
        reps = free_representatives(domains, best.evaluated.slots)
        for label, slots in _moves(best.evaluated.slots, movable, reps):
            if spent >= budget:
                break
            spent += 1
            result = scorer.evaluate(f"{start.label}; {label}", slots)
            if isinstance(result, Scored) and result.sort_key() < best.sort_key():
                best = result
                improved = True
                break
    return best, spent
