"""How long ``fabricfit simulate`` takes per job: traces of many small jobs, timed per stage.

Run from the repository root::

    .venv/bin/python benchmarks/simulate_scale.py                 # 1,000 and 5,000 jobs
    .venv/bin/python benchmarks/simulate_scale.py --jobs 20000    # any sizes (repeatable)
    .venv/bin/python benchmarks/simulate_scale.py --profile 5000  # cProfile's top entries

A trace's documented limit is 100,000 jobs (``simulation.trace.MAX_JOBS``), and the fuzz of issue
#36 found 5,000 one-GPU jobs taking 30 s. Each trace here is N one-GPU jobs arriving every 10 s,
each running an hour, on the shipped 64-node DGX-H100 dump (``traces/nodes-h100-64.yaml``): at
most 360 run at once, so the cluster is never full and every job is placed at its arrival — the
cost is placement and bookkeeping, not queueing. Reported per placer: seconds for parsing the
trace, for the replay, and the replay's milliseconds per job, wall clock
(``time.perf_counter``) and CPU (``time.process_time``, which a busy machine inflates less);
compare runs made side by side.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

from fabricfit.fabric.documents import decode_text, load_objects
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.snapshot import build_snapshot
from fabricfit.simulation import PLACERS, parse_trace, replay

NODES = Path(__file__).resolve().parent / "traces" / "nodes-h100-64.yaml"
DEFAULT_JOBS = (1_000, 5_000)


def one_gpu_trace(jobs: int) -> dict[str, object]:
    """``jobs`` one-GPU jobs, one every 10 s, an hour each."""
    return {
        "jobs": [
            {
                "name": f"job-{i}",
                "arrival": 10 * i,
                "duration": 3600,
                "gpusPerPod": 1,
                "parallelism": {"data": 1},
            }
            for i in range(jobs)
        ]
    }


def measure(jobs: int) -> list[str]:
    snapshot = build_snapshot(load_objects(decode_text(NODES.read_bytes())), [], scheme="native")
    profile = get_profile("dgx-h100")
    document = one_gpu_trace(jobs)
    start = time.perf_counter()
    trace = parse_trace(document)
    parse_s = time.perf_counter() - start
    lines = []
    for name, placer in PLACERS.items():
        start, cpu = time.perf_counter(), time.process_time()
        result = replay(snapshot, trace, profile, placer=placer, name=name)
        replay_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu
        placed = sum(1 for run in result.jobs if run.start is not None)
        lines.append(
            f"{jobs:>7,} {name:<14} {placed:>7,} {parse_s:>8.2f} {replay_s:>9.2f} "
            f"{1e3 * replay_s / jobs:>8.2f} {1e3 * cpu_s / jobs:>8.2f}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, action="append", help="trace size (repeatable)")
    parser.add_argument("--profile", type=int, metavar="JOBS", help="cProfile one replay")
    args = parser.parse_args(argv)
    if args.profile:
        snapshot = build_snapshot(
            load_objects(decode_text(NODES.read_bytes())), [], scheme="native"
        )
        trace = parse_trace(one_gpu_trace(args.profile))
        profiler = cProfile.Profile()
        profiler.runcall(
            replay,
            snapshot,
            trace,
            get_profile("dgx-h100"),
            placer=PLACERS["fabricfit"],
            name="fabricfit",
        )
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
        return 0
    print(
        f"{'jobs':>7} {'placer':<14} {'placed':>7} {'parse s':>8} {'replay s':>9} {'ms/job':>8} "
        f"{'cpu ms/job':>10}"
    )
    for jobs in args.jobs or DEFAULT_JOBS:
        for line in measure(jobs):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
