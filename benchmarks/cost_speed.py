"""How fast is the cost model? Prints evaluations per second on one core.

Measures, for a 1,024-GPU all-reduce on the dgx-h100 preset (128 nodes × 8 GPUs, 4 rail groups
of 32 nodes, one spine):

* ``estimate_shape`` with its cache cleared before every call (the model's arithmetic: every
  candidate algorithm and protocol evaluated) — the placement-search requirement is ≥ 20,000/s;
* ``estimate_shape`` on a warm cache (what repeated candidates cost);
* ``summarize_group`` over the 1,024 slots (paid once per candidate group);
* ``estimate_collective`` = summarize + estimate;
* ``estimate_step`` for a 1,024-GPU TP8 × PP4 × DP32 Llama-70B-like job (target ≲ 5 ms).

Run: ``.venv/bin/python benchmarks/cost_speed.py``
"""

from __future__ import annotations

import time
from collections.abc import Callable

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.cost import (
    Collective,
    estimate_collective,
    estimate_shape,
    estimate_step,
    summarize_group,
)
from fabricfit.cost.collectives import _estimate
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import GpuSlot

NODES, GPUS = 128, 8
TP, DP, PP = 8, 32, 4


def cluster() -> list[GpuSlot]:
    return [
        GpuSlot(
            node=f"n{n}",
            gpu=j,
            rail=j,
            nvlink_domain=f"n{n}",
            rail_group=f"su{n // 32}",
            spine="s0",
        )
        for n in range(NODES)
        for j in range(GPUS)
    ]


def megatron_groups() -> dict[str, list[list[int]]]:
    def rank(tp: int, dp: int, pp: int) -> int:
        return tp + TP * (dp + DP * pp)

    return {
        "tensor": [[rank(i, d, p) for i in range(TP)] for d in range(DP) for p in range(PP)],
        "data": [[rank(t, i, p) for i in range(DP)] for t in range(TP) for p in range(PP)],
        "pipeline": [[rank(t, d, i) for i in range(PP)] for t in range(TP) for d in range(DP)],
        "context": [],
        "expert": [],
    }


def rate(label: str, fn: Callable[[], object], seconds: float = 1.0) -> float:
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(50):
            fn()
        calls += 50
    per_s = calls / elapsed
    print(f"{label:<58} {per_s:>12,.0f} /s  {1e6 / per_s:>9.1f} µs each")
    return per_s


def main() -> int:
    profile = get_profile("dgx-h100")
    slots = cluster()
    shape = summarize_group(slots)
    size = 1 << 30

    def uncached() -> None:
        _estimate.cache_clear()
        estimate_shape(Collective.ALL_REDUCE, size, shape, profile)

    example = estimate_shape(Collective.ALL_REDUCE, size, shape, profile)
    print(f"1,024-GPU all-reduce of 1 GiB on dgx-h100: {example}")
    cold = rate("estimate_shape, cache cleared every call (model arithmetic)", uncached)
    rate(
        "estimate_shape, warm cache",
        lambda: estimate_shape(Collective.ALL_REDUCE, size, shape, profile),
    )
    rate("summarize_group(1,024 slots)", lambda: summarize_group(slots), 0.5)
    rate(
        "estimate_collective (summarize + estimate)",
        lambda: estimate_collective(Collective.ALL_REDUCE, size, slots, profile),
        0.5,
    )
    groups = megatron_groups()
    par = Parallelism(tensor=TP, pipeline=PP, data=DP)
    model = ModelShape(parameters=70_000_000_000, hidden_size=8192, layers=80, micro_batches=16)
    step_rate = rate(
        "estimate_step, 1,024 GPUs TP8xPP4xDP32",
        lambda: estimate_step(groups, slots, par, model, profile),
        1.0,
    )
    print(f"estimate_step: {1e3 / step_rate:.2f} ms per call (target <= 5 ms)")
    ok = cold >= 20_000
    verdict = "met" if ok else "NOT met"
    print(f"requirement >= 20,000 evaluations/s of estimate_shape: {verdict} ({cold:,.0f}/s)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
