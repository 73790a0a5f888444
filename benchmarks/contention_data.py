"""Extract the MCCS artefact's measurements the contention validation uses into a fixture.

The MCCS paper's artefact (Wu et al., "MCCS: A Service-based Approach to Collective
Communication for Multi-Tenant Cloud", SIGCOMM'24; github.com/phoenix-dataplane/mCCS, branch
``artifact``, commit 86a25c71a9b050bd7b8a1a1f08fa116470492ce9, Apache-2.0) commits the raw
nccl-tests results behind its Figures 6 and 8. This script reads them from a clone at that
commit and writes ``tests/fixtures/contention/mccs.csv``: for the 128 MiB fp16 all-reduce rows
of NCCL's two ring orders ("NCCL GR", "NCCL BR"), one line per run of the single-application
runs (the jobs alone, Figure 6) and one line per trial of the multi-application settings
(Figure 8) with the mean bus bandwidth of that trial's iterations::

    .venv/bin/python benchmarks/contention_data.py /path/to/mCCS   # a clone with 86a25c7

Columns: file, solution, app, trial, busbw_gb_per_s (GB = 1e9 bytes, nccl-tests' busbw).
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

COMMIT = "86a25c71a9b050bd7b8a1a1f08fa116470492ce9"
SIZE = "134217728"  # 128 MiB
SOLUTIONS = ("NCCL GR", "NCCL BR")
SINGLE = ("eval/plot/single_app/allreduce_4gpu.csv", "eval/plot/single_app/allreduce_8gpu.csv")
MULTI = tuple(f"eval/plot/multi_app/setting{n}.csv" for n in (1, 2, 3, 4))
OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "contention" / "mccs.csv"


def _rows(clone: Path, path: str) -> list[dict[str, str]]:
    text = subprocess.run(
        ["git", "-C", str(clone), "show", f"{COMMIT}:{path}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return list(csv.DictReader(io.StringIO(text)))


def extract(clone: Path) -> list[tuple[str, str, str, int, float]]:
    out: list[tuple[str, str, str, int, float]] = []
    for path in SINGLE:
        runs: dict[str, list[float]] = defaultdict(list)
        for row in _rows(clone, path):
            if row["Solution"] in SOLUTIONS and row["Size (Bytes)"] == SIZE:
                runs[row["Solution"]].append(float(row["BusBW (GB/s)"]))
        for solution, values in sorted(runs.items()):
            out += [(path, solution, "alone", i + 1, v) for i, v in enumerate(values)]
    for path in MULTI:
        trials: dict[tuple[str, str, int], list[float]] = defaultdict(list)
        for row in _rows(clone, path):
            if row["Solution"] in SOLUTIONS and row["Size (Bytes)"] == SIZE:
                key = (row["Solution"], row["App"], int(row["Trial ID"]))
                trials[key].append(float(row["BusBW (GB/s)"]))
        for (solution, app, trial), values in sorted(trials.items()):
            out.append((path, solution, app, trial, round(sum(values) / len(values), 4)))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    rows = extract(Path(argv[0]))
    with OUT.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(("file", "solution", "app", "trial", "busbw_gb_per_s"))
        writer.writerows(rows)
    print(f"wrote {len(rows)} rows to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
