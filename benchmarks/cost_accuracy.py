"""Print the cost model's predictions next to published measurements.

The table, its rows and sources live in ``tests/unit/cost/measurements.py`` (the same table the
accuracy test asserts on). Exit code 1 when a tolerance is exceeded.

Run: ``.venv/bin/python benchmarks/cost_accuracy.py``
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "tests" / "unit" / "cost" / "measurements.py"


def main() -> int:
    spec = importlib.util.spec_from_file_location("fabricfit_cost_measurements", TABLE)
    if spec is None or spec.loader is None:
        print(f"cannot load {TABLE}", file=sys.stderr)
        return 2
    table = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = table
    spec.loader.exec_module(table)
    comparisons, reference = table.run()
    print(table.render(comparisons, reference))
    ok = (
        all(c.passed for c in comparisons)
        and table.bandwidth_median(comparisons) <= table.MEDIAN_LIMIT
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
