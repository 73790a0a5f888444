"""Cluster-level benchmark: the shipped traces replayed with fabricfit, Kueue BestFit and spread.

Run from the repository root::

    .venv/bin/python benchmarks/simulate.py            # both traces, three fabrics
    .venv/bin/python benchmarks/simulate.py --quick    # the small trace only
    .venv/bin/python benchmarks/simulate.py --seed 17  # also published-mix drawn with seed 17
    .venv/bin/python benchmarks/simulate.py --draws 16-47  # the targets over 32 draws (~6 min)
    .venv/bin/python benchmarks/simulate.py --targets      # issue 35's targets, published-mix
    .venv/bin/python benchmarks/simulate.py --contention off   # each job priced as if alone

Inputs are ``benchmarks/traces/`` (``generate.py`` writes the node dump and the generated trace
from published job-size figures; ``small.yaml`` is hand-written); ``--seed N`` (repeatable) adds
the generated mix drawn with another seed, made in memory by the same ``published_mix``, so a
change is not judged on one draw only; ``--draws FIRST-LAST`` replays every draw in that range
(instead of the tables) and counts, per fabric, the draws where fabricfit meets the trace targets
against the Kueue BestFit emulation — less communication, mean and p95 wait no longer, compared
as printed (GPU-h to 0.1, seconds to 1) — with each queue policy. Each trace is replayed on the
64-node DGX-H100 cluster once per fabric (``dgx-h100`` full bisection, ``h100-leaf-spine-2to1``,
``h100-rail-only``), and the GB200 variant of the generated mix (``published-mix-nvl72.yaml``:
the same draws in pods of at most one 4-GPU tray; ``--seed``/``--draws`` draw it too) on the
144-tray GB200 NVL72 cluster (``gb200-nvl72``; not with ``--quick``), per placer by the pure
simulation (``fabricfit.simulation``,
the same code as ``fabricfit simulate``), so every figure is the cost model's prediction, not a
measurement on hardware. Every placement is priced next to the running jobs' traffic, as
``fabricfit simulate`` does by default (``--contention off``: each job as if alone, the
figures before contention was modelled). Every placer runs a strict FIFO queue; the row
``fabricfit+wait`` is fabricfit again under the ``wait-if-faster`` queue policy (``simulate
--queue-policy``: hold the head of the queue when waiting for running jobs to end lets it
finish sooner — a what-if, since it reads the trace's durations, which the operator does not
know; jobs behind a held head are backfilled where they do not delay it). Per row: jobs
placed, queueing delay mean / p95, makespan, mean GPU utilisation, communication GPU-hours and
their share, spine-crossing bytes,
the largest whole-node job that fits in one rail group (time-weighted mean / minimum), and the
replay's wall time.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from fabricfit.fabric.documents import decode_text, load_objects
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.simulation import (
    FABRICFIT,
    PLACERS,
    STRICT_FIFO,
    WAIT_IF_FASTER,
    Rules,
    Summary,
    TraceJob,
    parse_trace,
    replay,
    summarize,
)

TRACES = Path(__file__).resolve().parent / "traces"


@dataclass(frozen=True)
class Cluster:
    """A node dump, the fabrics it is replayed as, and the traces (files, generated mix) for it."""

    nodes: str
    fabrics: tuple[str, ...]
    traces: tuple[str, ...]  # the shipped trace files, the small one (``--quick``) first
    mix: str  # ``generate.py``'s name of the cluster the generated mix is drawn for
    quick: bool  # replayed with ``--quick``


CLUSTERS = (
    Cluster(
        "nodes-h100-64.yaml",
        ("dgx-h100", "h100-leaf-spine-2to1", "h100-rail-only"),
        ("small.yaml", "published-mix.yaml"),
        "FABRIC",
        quick=True,
    ),
    Cluster(
        "nodes-gb200-144.yaml",
        ("gb200-nvl72",),
        ("published-mix-nvl72.yaml",),
        "NVL72",
        quick=False,
    ),
)
FABRICS = tuple(f for c in CLUSTERS for f in c.fabrics)
#: Every placer strictly FIFO, then fabricfit again holding the head when that pays (a what-if:
#: it reads the trace's durations, which the operator does not know).
ROWS = (
    *((name, placer, STRICT_FIFO) for name, placer in PLACERS.items()),
    ("fabricfit+wait", PLACERS[FABRICFIT], WAIT_IF_FASTER),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the small trace only")
    parser.add_argument(
        "--seed", type=int, action="append", default=[], help="also the mix drawn with this seed"
    )
    parser.add_argument(
        "--draws", type=_draw_range, metavar="FIRST-LAST", help="count the targets over seeds"
    )
    parser.add_argument(
        "--contention",
        choices=("on", "off"),
        default="on",
        help="price placements next to the running jobs' traffic (default on, as simulate)",
    )
    parser.add_argument(
        "--targets", action="store_true", help="the issue-35 targets on published-mix.yaml"
    )
    args = parser.parse_args(argv)
    contention = args.contention == "on"
    clusters = [c for c in CLUSTERS if c.quick or not args.quick]
    snapshots = {c: _snapshot(c) for c in clusters}
    if args.targets:
        return _targets(snapshots[CLUSTERS[0]], contention)
    if args.draws:
        return _count_draws(snapshots, args.draws, contention)
    for cluster, snapshot in snapshots.items():
        files = cluster.traces[:1] if args.quick else cluster.traces
        documents = {
            name: load_objects(decode_text((TRACES / name).read_bytes()))[0] for name in files
        }
        for seed in args.seed:
            documents[f"published-mix seed {seed}"] = _published_mix(seed, cluster)
        for trace_name, document in documents.items():
            _print_tables(trace_name, parse_trace(document), cluster, snapshot, contention)
    return 0


def _snapshot(cluster: Cluster) -> ClusterSnapshot:
    nodes = load_objects(decode_text((TRACES / cluster.nodes).read_bytes()))
    return build_snapshot(nodes, [], scheme="native")


def _print_tables(
    trace_name: str,
    jobs: Sequence[TraceJob],
    cluster: Cluster,
    snapshot: ClusterSnapshot,
    contention: bool,
) -> None:
    gpus = sum(n.gpus for n in snapshot.nodes)
    for fabric in cluster.fabrics:
        profile = get_profile(fabric)
        print(
            f"\ntrace {trace_name} ({len(jobs)} jobs), fabric {fabric}, "
            f"{len(snapshot.nodes)} nodes / {gpus} GPUs"
        )
        print(
            f"{'placer':<14} {'placed':>6} {'wait mean s':>11} {'wait p95 s':>10} "
            f"{'makespan h':>10} {'util':>5} {'comm GPU-h':>10} {'comm %':>6} "
            f"{'spine TB':>9} {'largest RG mean/min':>19} {'wall s':>7}"
        )
        for name, placer, policy in ROWS:
            start = time.perf_counter()
            result = replay(
                snapshot, jobs, profile, placer=placer, name=name, rules=Rules(policy, contention)
            )
            wall = time.perf_counter() - start
            s = summarize(result)
            print(
                f"{name:<14} {s.placed:>6} {s.wait_mean_s:>11.0f} {s.wait_p95_s:>10.0f} "
                f"{s.makespan_s / 3600:>10.2f} {s.utilisation_mean:>5.0%} "
                f"{s.comm_gpu_seconds / 3600:>10.1f} {s.comm_share:>6.1%} "
                f"{s.spine_bytes / 1e12:>9.1f} "
                f"{s.largest_rail_group_gpus_mean:>13.0f} / {s.largest_rail_group_gpus_min:<3} "
                f"{wall:>7.1f}",
                flush=True,
            )


TARGET_RATIO = 1.15  # Kueue emulation's communication GPU-h over fabricfit's, at least


def _targets(snapshot: ClusterSnapshot, contention: bool) -> int:
    """published-mix.yaml on the three H100 fabrics: fabricfit (both queue policies) against
    the Kueue BestFit emulation, with the run's contention setting."""
    document = load_objects(decode_text((TRACES / "published-mix.yaml").read_bytes()))[0]
    jobs = parse_trace(document)
    rows = [r for r in ROWS if r[0] in ("kueue-bestfit", "fabricfit", "fabricfit+wait")]
    print(
        f"published-mix.yaml ({len(jobs)} jobs), contention {'on' if contention else 'off'}; "
        f"target: Kueue's comm GPU-h >= {TARGET_RATIO}x fabricfit's, waits no longer "
        "(dgx-h100: never worse)"
    )
    print(
        f"{'fabric':<22} {'placer':<15} {'comm GPU-h':>10} {'contention h':>12} "
        f"{'spine TB':>9} {'wait mean/p95 s':>16} {'Kueue/this':>10} {'comm':>6} {'waits':>6}"
    )
    for fabric in CLUSTERS[0].fabrics:
        profile = get_profile(fabric)
        runs = {
            name: replay(
                snapshot, jobs, profile, placer=placer, name=name, rules=Rules(policy, contention)
            )
            for name, placer, policy in rows
        }
        got = {name: summarize(run) for name, run in runs.items()}
        peer = got["kueue-bestfit"]
        for name, s in got.items():
            ratio = peer.comm_gpu_seconds / s.comm_gpu_seconds
            waits = round(s.wait_mean_s) <= round(peer.wait_mean_s) and round(
                s.wait_p95_s
            ) <= round(peer.wait_p95_s)
            wanted = ratio >= 1.0 if fabric == "dgx-h100" else ratio >= TARGET_RATIO
            comm = "" if name == "kueue-bestfit" else ("met" if wanted else "missed")
            wait = "" if name == "kueue-bestfit" else ("met" if waits else "missed")
            print(
                f"{fabric:<22} {name:<15} {s.comm_gpu_seconds / 3600:>10.1f} "
                f"{s.contention_gpu_seconds / 3600:>12.2f} {s.spine_bytes / 1e12:>9.1f} "
                f"{s.wait_mean_s:>8.0f}/{s.wait_p95_s:<7.0f} {ratio:>10.3f} {comm:>6} {wait:>6}",
                flush=True,
            )
        if contention:
            print(
                "  jobs with traffic on shared links / busiest link's average load: "
                + "; ".join(
                    f"{name} {sum(j.shares_links for j in run.jobs)} / {run.busiest_link_share:.0%}"
                    for name, run in runs.items()
                )
            )
    return 0


def _draw_range(text: str) -> range:
    first, _, last = text.partition("-")
    if not (first.isdigit() and last.isdigit() and int(first) <= int(last)):
        raise argparse.ArgumentTypeError(f"expected FIRST-LAST seeds, e.g. 16-47, not {text!r}")
    return range(int(first), int(last) + 1)


def _printed(summary: Summary) -> tuple[float, int, int]:
    """Communication GPU-h, wait mean and p95 as the tables print them."""
    return (
        round(summary.comm_gpu_seconds / 3600, 1),
        round(summary.wait_mean_s),
        round(summary.wait_p95_s),
    )


@dataclass
class _Tally:
    """Draws where all three targets hold, comm is lower, both waits no longer; Σ log comm ratio."""

    met: int = 0
    lower: int = 0
    waits: int = 0
    log_ratio: float = 0.0


def _count_draws(
    snapshots: Mapping[Cluster, ClusterSnapshot], seeds: range, contention: bool
) -> int:
    names = ("kueue-bestfit", "fabricfit", "fabricfit+wait")
    rows = [r for r in ROWS if r[0] in names]
    fabrics = [(f, c) for c in snapshots for f in c.fabrics]
    tally = {(f, n): _Tally() for f, _ in fabrics for n in names[1:]}
    print(f"{'seed':>4} {'fabric':<22} " + " | ".join(f"{n:>22}" for n in names))
    for seed in seeds:
        drawn = {c: parse_trace(_published_mix(seed, c)) for c in snapshots}
        for fabric, cluster in fabrics:
            snapshot, jobs = snapshots[cluster], drawn[cluster]
            profile = get_profile(fabric)
            got = {
                name: summarize(
                    replay(
                        snapshot,
                        jobs,
                        profile,
                        placer=placer,
                        name=name,
                        rules=Rules(policy, contention),
                    )
                )
                for name, placer, policy in rows
            }
            peer = _printed(got["kueue-bestfit"])
            cells = []
            for name in names:
                comm, mean, p95 = _printed(got[name])
                mark = ""
                if name != "kueue-bestfit":
                    lower, waits = comm < peer[0], mean <= peer[1] and p95 <= peer[2]
                    t = tally[fabric, name]
                    t.met += lower and waits
                    t.lower += lower
                    t.waits += waits
                    t.log_ratio += math.log(
                        got[name].comm_gpu_seconds / got["kueue-bestfit"].comm_gpu_seconds
                    )
                    mark = " ok" if lower and waits else " --"
                cells.append(f"{comm:>7.1f} {mean:>5}/{p95:>5}{mark:>3}")
            print(f"{seed:>4} {fabric:<22} " + " | ".join(cells), flush=True)
    draws = f"{len(seeds)} draw{'' if len(seeds) == 1 else 's'}"
    print(f"\n{draws}, seeds {seeds[0]}-{seeds[-1]}; fabricfit against kueue-bestfit")
    print(
        f"{'fabric':<22} {'queue':<16} {'all three':>9} {'comm lower':>10} "
        f"{'waits no longer':>15} {'comm ratio (geo mean)':>21}"
    )
    for fabric, _ in fabrics:
        for name in names[1:]:
            t = tally[fabric, name]
            print(
                f"{fabric:<22} {name:<16} {t.met:>9} {t.lower:>10} {t.waits:>15} "
                f"{math.exp(t.log_ratio / len(seeds)):>21.3f}"
            )
    return 0


def generator() -> ModuleType:
    """``traces/generate.py``, loaded from its file: a script beside the traces it writes, not a
    module on the path."""
    spec = importlib.util.spec_from_file_location("generate", TRACES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _published_mix(seed: int, cluster: Cluster) -> object:
    """The generated trace drawn with ``seed`` for ``cluster`` (``traces/generate.py``, not
    written to disk)."""
    generate = generator()
    return generate.published_mix(seed=seed, fabric=getattr(generate, cluster.mix))


if __name__ == "__main__":
    raise SystemExit(main())
