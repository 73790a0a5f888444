"""Cluster-level benchmark: the shipped traces replayed with fabricfit, Kueue BestFit and spread.

Run from the repository root::

    .venv/bin/python benchmarks/simulate.py            # both traces, three fabrics
    .venv/bin/python benchmarks/simulate.py --quick    # the small trace only
    .venv/bin/python benchmarks/simulate.py --seed 17  # also published-mix drawn with seed 17

Inputs are ``benchmarks/traces/`` (``generate.py`` writes the node dump and the generated trace
from published job-size figures; ``small.yaml`` is hand-written); ``--seed N`` (repeatable) adds
the generated mix drawn with another seed, made in memory by the same ``published_mix``, so a
change is not judged on one draw only. Each trace is replayed on the
64-node DGX-H100 cluster once per fabric (``dgx-h100`` full bisection, ``h100-leaf-spine-2to1``,
``h100-rail-only``) and per placer by the pure simulation (``fabricfit.placement.simulation``,
the same code as ``fabricfit simulate``), so every figure is the cost model's prediction, not a
measurement on hardware. Every placer runs a strict FIFO queue; the row ``fabricfit+wait`` is
fabricfit again under the ``wait-if-faster`` queue policy (``simulate --queue-policy``: hold the
head of the queue when waiting for running jobs to end lets it finish sooner — a what-if, since it
reads the trace's durations, which the operator does not know; jobs behind a held head are
backfilled where they do not delay it). Per row: jobs placed, queueing delay mean / p95,
makespan, mean GPU utilisation, communication GPU-hours and their share, spine-crossing bytes,
the largest whole-node job that fits in one rail group (time-weighted mean / minimum), and the
replay's wall time.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from fabricfit.fabric.documents import decode_text, load_objects
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.placement.simulation import (
    FABRICFIT,
    PLACERS,
    STRICT_FIFO,
    WAIT_IF_FASTER,
    parse_trace,
    replay,
    summarize,
)

TRACES = Path(__file__).resolve().parent / "traces"
FABRICS = ("dgx-h100", "h100-leaf-spine-2to1", "h100-rail-only")
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
    args = parser.parse_args(argv)
    nodes = load_objects(decode_text((TRACES / "nodes-h100-64.yaml").read_bytes()))
    snapshot = build_snapshot(nodes, [], scheme="native")
    traces = ["small.yaml"] if args.quick else ["small.yaml", "published-mix.yaml"]
    documents = {
        name: load_objects(decode_text((TRACES / name).read_bytes()))[0] for name in traces
    }
    for seed in args.seed:
        documents[f"published-mix seed {seed}"] = _published_mix(seed)
    for trace_name, document in documents.items():
        jobs = parse_trace(document)
        for fabric in FABRICS:
            profile = get_profile(fabric)
            print(f"\ntrace {trace_name} ({len(jobs)} jobs), fabric {fabric}, 64 nodes / 512 GPUs")
            print(
                f"{'placer':<14} {'placed':>6} {'wait mean s':>11} {'wait p95 s':>10} "
                f"{'makespan h':>10} {'util':>5} {'comm GPU-h':>10} {'comm %':>6} "
                f"{'spine TB':>9} {'largest RG mean/min':>19} {'wall s':>7}"
            )
            for name, placer, policy in ROWS:
                start = time.perf_counter()
                result = replay(
                    snapshot, jobs, profile, placer=placer, name=name, queue_policy=policy
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
    return 0


def _published_mix(seed: int) -> object:
    """The generated trace drawn with ``seed`` (``traces/generate.py``, not written to disk)."""
    sys.path.insert(0, str(TRACES))
    import generate  # it puts hack/ on sys.path, so only when asked for

    return generate.published_mix(seed=seed)


if __name__ == "__main__":
    raise SystemExit(main())
