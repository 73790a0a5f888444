"""Serving benchmark, offline: fabricfit's placement of served models against Kueue TAS BestFit
(the package's emulation, ``placement.peers.kueue_bestfit``), per-token communication first.

Run from the repository root::

    .venv/bin/python benchmarks/serving.py              # the table of docs/benchmarks/serving.md
    .venv/bin/python benchmarks/serving.py --seeds 2    # fewer clusters

Clusters: ``benchmarks/placement.py``'s builder — 64 DGX H100 nodes (rail groups of 32, racks
of 4) or 72 GB200 trays (NVL72 racks of 18, rail groups of two racks) — with 30 % and 60 % of
the GPUs held by seeded random pods, for each of ``--seeds`` seeds; fabrics ``dgx-h100``
(full bisection), ``h100-leaf-spine-2to1`` (a 2:1 spine) and ``gb200-nvl72``.

Kueue places a LeaderWorkerSet one group (one replica) at a time, each group a Workload of its
own (``sigs.k8s.io/kueue@v0.19.2/pkg/controller/jobs/leaderworkerset``); the emulation does the
same: each replica in turn by BestFit with the careful user's annotation — the replica on one
node when it fits one, else inside one rack (an NVL72 rack is its NVLink domain), else one rail
group — on the slots earlier replicas left (``careful_level``). Kueue v0.19.2 has no way to
spread a job's replicas over domains (``podset-topology-spreading`` is not in its feature
gates, ``pkg/features/kube_features.go``), so its placement of the spread case is the same
BestFit.
For a disaggregated pair the prefill side is one existing deployment for both sides —
Kueue's packed BestFit placement, or fabricfit's plan spread over racks — and the decode side,
placed second, is what is compared (the side planned first knows no partner in either system).

Every placement is priced by the same function (``serving_cases.price``); ratios are
Kueue ÷ fabricfit (> 1: fabricfit predicts less communication).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from fabricfit.fabric.profiles import FabricProfile, get_profile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.constraints import eligible_nodes
from fabricfit.placement.decision import PlacementDecision
from fabricfit.placement.feasibility import max_domain_gpus
from fabricfit.placement.layout import build_layout
from fabricfit.placement.pairing import Partner
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.search import plan_placement
from fabricfit.placement.serving import block_ladder, careful_level, replica_bestfit
from fabricfit.placement.slots import PodSlot, build_leaf_domains, leaf_key
from placement import make_cluster  # the script's own directory is sys.path[0]
from serving_cases import CASES, Case, Side, partner_of, pod_gpus, prefill_case, ratio, side

FABRICS = ("dgx-h100", "h100-leaf-spine-2to1", "gb200-nvl72")
FRAGMENTATION = (0.3, 0.6)


def cluster(profile: FabricProfile, fragmentation: float, seed: int) -> ClusterSnapshot:
    nodes = 72 if profile.gpus_per_node == 4 else 64
    return make_cluster(nodes, fragmentation, seed=seed, profile=profile)


def kueue_place(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    held: dict[str, int],
) -> tuple[PodSlot, ...] | None:
    """Each replica in turn by BestFit at the careful user's level, as Kueue admits a
    LeaderWorkerSet's groups (``placement.serving.replica_bestfit``)."""
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    eligible, _ = eligible_nodes(snapshot, request, held)
    blocks = next(iter(block_ladder(request, layout, max_domain_gpus(eligible))))
    domains = build_leaf_domains(eligible, request.gpus_per_pod, held)
    return replica_bestfit(blocks, domains, careful_level(request, eligible))


def slots_of(decision: PlacementDecision, snapshot: ClusterSnapshot) -> tuple[PodSlot, ...]:
    """fabricfit's pods as slots: node and GPUs from the decision's assignments."""
    gpus: dict[int, list[int]] = {}
    for a in sorted(decision.assignments, key=lambda a: (a.pod, a.local)):
        gpus.setdefault(a.pod, []).append(a.gpu)
    out = []
    for pod, name in enumerate(decision.pods):
        node = snapshot.node(name)
        place = node.place
        out.append(PodSlot(name, gpus[pod][0] // len(gpus[pod]), tuple(gpus[pod]), place.spine,
                           leaf_key(node)[0], place.rack or "", place.nvlink_domain or name,
                           place.rail_group))  # fmt: skip
    return tuple(out)


@dataclass(frozen=True)
class Result:
    fabric: str
    fragmentation: float
    seed: int
    case: str
    kueue: Side | None
    ours: Side | None


def run_case(
    case: Case, profile: FabricProfile, snapshot: ClusterSnapshot
) -> tuple[Side | None, Side | None]:
    """(Kueue's side, fabricfit's side) of one case on one cluster; None: it does not fit."""
    g = pod_gpus(case, profile)
    request = case.request(g)
    kueue_held: dict[str, int] = {}
    ours_held: dict[str, int] = {}
    kueue_request = ours_request = request
    if case.prefill is not None:
        first = prefill_case(case).request(g)
        mine = plan_placement(snapshot, first, profile)
        if case.prefill_spread:  # fabricfit's spread prefill, the same for both sides
            theirs: Sequence[PodSlot] | None = slots_of(mine, snapshot) if mine.feasible else None
        else:  # Kueue's packed prefill, the same for both sides
            theirs = kueue_place(snapshot, first, {})
        if theirs is None:
            return None, None
        kueue_held = dict(Counter(s.node for s in theirs))
        kueue_held = {node: count * g for node, count in kueue_held.items()}
        kueue_request = ours_request = _with(request, partner_of(case, g, theirs))
        ours_held = kueue_held
    kueue_slots = kueue_place(snapshot, kueue_request, kueue_held)
    decision = plan_placement(snapshot, ours_request, profile, reservations=ours_held)
    kueue = side(snapshot, kueue_request, profile, kueue_slots) if kueue_slots else None
    ours = (
        side(snapshot, ours_request, profile, slots_of(decision, snapshot))
        if decision.feasible
        else None
    )
    return kueue, ours


def _with(request: PlacementRequest, partner: Partner) -> PlacementRequest:
    return replace(request, partner=partner)


def run(seeds: int) -> list[Result]:
    results = []
    for fabric in FABRICS:
        profile = get_profile(fabric)
        for fragmentation in FRAGMENTATION:
            for seed in range(1, seeds + 1):
                snapshot = cluster(profile, fragmentation, seed)
                for case in CASES:
                    kueue, ours = run_case(case, profile, snapshot)
                    results.append(Result(fabric, fragmentation, seed, case.label, kueue, ours))
    return results


def _ms(values: Sequence[float]) -> str:
    return f"{statistics.median(values) * 1e3:.3g}" if values else "—"


def _span(values: Sequence[float]) -> str:
    if not values:
        return "—"
    low, high = min(values), max(values)
    return f"{low:.2f}×" if abs(high - low) < 0.005 else f"{low:.2f}–{high:.2f}×"


def table(results: Sequence[Result]) -> list[str]:
    lines = [
        "| fabric | used | case | Kueue decode ms | fabricfit decode ms | decode ratio | "
        "prefill ratio | KV ratio | objective ratio | most replicas per rack (Kueue · fabricfit) "
        "| fits (Kueue · fabricfit) | worse |",
        "|---|---:|---|---:|---:|---|---|---|---|---|---|---:|",
    ]
    keys = dict.fromkeys((r.fabric, r.fragmentation, r.case) for r in results)
    for key in keys:
        rows = [r for r in results if (r.fabric, r.fragmentation, r.case) == key]
        both = [(r.kueue, r.ours) for r in rows if r.kueue is not None and r.ours is not None]
        fits = f"{sum(r.kueue is not None for r in rows)} · {sum(r.ours is not None for r in rows)}"
        fits += f" of {len(rows)}"
        lines.append(_line(key, both, fits))
    return lines


def _line(key: tuple[str, float, str], both: Sequence[tuple[Side, Side]], fits: str) -> str:
    fabric, fragmentation, label = key
    head = f"| {fabric} | {fragmentation:.0%} | {label} | "
    if not both:
        return head + f"| | | | | | | {fits} | |"
    kueue, ours = [k for k, _ in both], [o for _, o in both]
    crowd = f"{_span_int([k.most_per_rack for k in kueue])} · "
    crowd += _span_int([o.most_per_rack for o in ours])
    cells = [
        _ms([k.decode_s for k in kueue if k.decode_s is not None]),
        _ms([o.decode_s for o in ours if o.decode_s is not None]),
        *(_span(_ratios(both, attr)) for attr in ("decode_s", "prefill_s", "kv_s", "objective_s")),
        crowd,
        fits,
        f"{sum(_worse(k, o) for k, o in both)}/{len(both)}",
    ]
    return head + " | ".join(cells) + " |"


def _ratios(both: Sequence[tuple[Side, Side]], attr: str) -> list[float]:
    found = [ratio(getattr(k, attr), getattr(o, attr)) for k, o in both]
    return [x for x in found if x is not None]


def _worse(kueue: Side, ours: Side) -> bool:
    """fabricfit predicts more: its objective, or its communication per output token."""
    tolerance = 1 + 1e-9
    decode = (ours.decode_s or 0.0) > (kueue.decode_s or 0.0) * tolerance
    return decode or ours.objective_s > kueue.objective_s * tolerance


def _span_int(values: Sequence[int]) -> str:
    return str(values[0]) if min(values) == max(values) else f"{min(values)}–{max(values)}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="clusters per fabric and load")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results = run(args.seeds)
    print("\n".join(table(results)))
    both = [r for r in results if r.kueue is not None and r.ours is not None]
    worse = [r for r in both if _worse(r.kueue, r.ours)]
    print(f"\n{len(both)} placements compared; fabricfit predicted more than Kueue in {len(worse)}")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
