"""Published collective measurements and the model's predictions for them, side by side.

Every row is a measurement someone published (source given), run through the cost model with
the preset of its hardware class; nothing here is tuned per row. Where a preset parameter was
read off the same source (e.g. Hopper's NVLink ring efficiency from nccl#1455), the row says so
(``calibrates``) and the summary line also reports the median over the held-out rows only. H20
rows run on the dgx-h100 preset: same NVLink4/NVSwitch fabric and NICs, slower compute only.

Bandwidths are nccl-tests busbw in GB/s (1e9), times in seconds. Rows with a per-rank buffer of
at most 64 KiB (or a per-rank shard that small, for the TPU row) are latency rows, judged by the
ratio of times; the others by relative error. ``REFERENCE_ONLY`` rows are printed but not
asserted, each with the reason.

Used by ``tests/unit/cost/test_accuracy.py`` and ``benchmarks/cost_accuracy.py``.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from fabricfit.cost import Collective, estimate_collective
from fabricfit.fabric.profiles import FabricProfile, get_profile
from fabricfit.fabric.topology import GpuSlot

KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
LATENCY_MAX_BYTES = 64 * KIB
MEDIAN_LIMIT, ROW_LIMIT, LATENCY_RATIO_LIMIT = 0.15, 0.35, 2.5


@dataclass(frozen=True)
class Measurement:
    id: str
    fabric: str
    collective: str
    size_bytes: int
    nodes: int
    gpus_per_node: int
    metric: str  # "busbw" (GB/s) or "seconds"
    measured: float
    source: str
    algorithm: str = "auto"
    nodes_per_domain: int | None = None  # None: the preset's NVLink domain
    latency: bool = False  # judged as a latency row (ratio), set for small buffers
    note: str = ""
    calibrates: str = ""  # the preset parameter this row's source also fixed (not held out)


def _row(*args: object, **kwargs: object) -> Measurement:
    row = Measurement(*args, **kwargs)  # type: ignore[arg-type]
    if row.size_bytes <= LATENCY_MAX_BYTES and not row.latency:
        row = Measurement(**{**row.__dict__, "latency": True})
    return row


AR, AG, A2A, SR = "all-reduce", "all-gather", "all-to-all", "send-recv"
NVL = "gb200-nvl72"
H20 = "DeepEP#303 (nccl-tests on 8x H20, NVLink4)"
EP_TOKENS = 8192 * 8 * 7168  # DeepEP: 8K tokens x top-8 x hidden 7168 (FP8 dispatch bytes)

# fmt: off
ROWS: tuple[Measurement, ...] = (
    # single-node NVLink (Ampere, Hopper, Blackwell)
    _row("V1", "dgx-a100", AR, 4 * GIB, 1, 8, "busbw", 232.5, "nccl-tests#175",
         calibrates="A100 nvlink_efficiency"),
    _row("V2", "dgx-a100", AR, 1 * GIB, 1, 8, "busbw", 200.0, "nccl-tests#149 (~200)"),
    _row("V6a", "dgx-h100", AR, 4 * GIB, 1, 2, "busbw", 367.5, "nccl#1455 (ALGO=RING)", "ring",
         calibrates="Hopper nvlink_efficiency"),
    _row("V6b", "dgx-h100", AR, 4 * GIB, 1, 8, "busbw", 367.5, "nccl#1455 (ALGO=RING)", "ring",
         calibrates="Hopper nvlink_efficiency"),
    _row("V7-4", "dgx-h100", AR, 4 * GIB, 1, 4, "busbw", 370.0, "nccl#1455 (ALGO=NVLS)", "nvls"),
    _row("V7-5", "dgx-h100", AR, 4 * GIB, 1, 5, "busbw", 420.0, "nccl#1455 (ALGO=NVLS)", "nvls"),
    _row("V7-6", "dgx-h100", AR, 4 * GIB, 1, 6, "busbw", 440.0, "nccl#1455 (ALGO=NVLS)", "nvls"),
    _row("V7-7", "dgx-h100", AR, 4 * GIB, 1, 7, "busbw", 460.0, "nccl#1455 (ALGO=NVLS)", "nvls"),
    _row("V7-8", "dgx-h100", AR, 4 * GIB, 1, 8, "busbw", 480.0, "nccl#1455 (ALGO=NVLS)", "nvls",
         calibrates="Hopper nvls_efficiency"),
    _row("V8", "dgx-h100", AR, 8 * GIB, 1, 8, "busbw", 480.0, "nccl-tests#212, #290"),
    _row("V11", "dgx-b200", AR, 8 * GIB, 1, 8, "busbw", 830.0, "nccl#1807 (NCCL 2.27.1)"),
    _row("V24d", "dgx-b200", A2A, EP_TOKENS, 1, 8, "busbw", 726.0, "DeepEP README (dispatch)",
         note="DeepEP kernel, not NCCL"),
    _row("V24c", "dgx-b200", A2A, 2 * EP_TOKENS, 1, 8, "busbw", 740.0, "DeepEP README (combine)",
         note="DeepEP kernel, not NCCL"),
    # GB200 NVL72 (one rack) and GB200 NVL4 / NVL8 partitions over InfiniBand
    _row("V12-4G", "gb200-nvl72", AR, 4 * GIB, 18, 4, "busbw", 839.2, "coreweave/nccl-tests"),
    _row("V12-8G", "gb200-nvl72", AR, 8 * GIB, 18, 4, "busbw", 834.6, "coreweave/nccl-tests"),
    _row("V15r", NVL, AR, 16 * GIB, 3, 4, "busbw", 196.7, "nccl#1801 (3x NVL4)", "ring", 1),
    _row("V15t", NVL, AR, 16 * GIB, 3, 4, "busbw", 234.4, "nccl#1801 (3x NVL4)", "tree", 1),
    _row("V16r", NVL, AR, 16 * GIB, 6, 4, "busbw", 393.7, "nccl#1801 (3x NVL8)", "ring", 2),
    _row("V16t", NVL, AR, 16 * GIB, 6, 4, "busbw", 485.7, "nccl#1801 (3x NVL8)", "tree", 2),
    _row("GB-2R", NVL, AR, 16 * GIB, 36, 4, "busbw", 810.4, "coreweave/nccl-tests (2 racks)",
         calibrates="gb200 max_collective_nics_per_domain"),
    _row("GB-20R", NVL, AR, 16 * GIB, 360, 4, "busbw", 405.7, "coreweave/nccl-tests (20 racks)",
         calibrates="gb200 max_collective_nics_per_domain"),
    _row("GB-20R4", NVL, AR, 4 * GIB, 360, 4, "busbw", 346.4, "coreweave/nccl-tests (20 racks)"),
    # multi-node rail-optimised InfiniBand
    _row("CW-H100", "dgx-h100", AR, 8 * GIB, 8, 8, "busbw", 386.6, "coreweave/nccl-tests (H100)",
         note="SHARP example manifest"),
    _row("V3", "dgx-a100", AR, 4 * GIB, 8, 8, "busbw", 192.0, "nccl#812 (DGX A100 8x HDR)"),
    _row("V20", "dgx-h100", SR, 1 * GIB, 2, 1, "busbw", 47.0, "nccl-tests#290, #267 (NDR)"),
    _row("V21", "dgx-a100", SR, 1 * GIB, 2, 1, "busbw", 24.0, "nccl-tests#160 (HDR)"),
    # TPU v5e ICI: all-gather over a 4-long mesh axis without wraparound (8x4 mesh)
    _row("T1", "tpu-v5e", AG, 2048 * 8192 * 2, 2, 2, "seconds", 680e-6,
         "scaling-book sharding.md (v5e 8x4 profile)"),
    _row("T2", "tpu-v5e", AG, 256 * 256 * 2, 2, 2, "seconds", 8e-6,
         "scaling-book sharding.md (v5e 8x4)", latency=True, note="32 kB per-chip shard"),
    # latency rows
    _row("L1", "dgx-h100", AR, 8, 1, 8, "seconds", 12.49e-6, H20),
    _row("L2", "dgx-h100", AR, 4096, 1, 8, "seconds", 16.69e-6, H20),
    _row("L3", "dgx-h100", A2A, 128, 1, 8, "seconds", 10.59e-6, H20),
    _row("L4", "dgx-h100", A2A, 4096, 1, 8, "seconds", 11.13e-6, H20),
    _row("L5", "dgx-h100", AR, 8, 2, 8, "seconds", 47.6e-6, "nccl#1244 (2x8 H20 NVLSTree)", "nvls"),
)

REFERENCE_ONLY: tuple[tuple[Measurement, str], ...] = (
    (_row("V12-512M", "gb200-nvl72", AR, 512 * MIB, 18, 4, "busbw", 586.1, "coreweave/nccl-tests"),
     "below plateau: NCCL's NVL72 ramp from 512 MiB to 4 GiB is not an alpha-beta effect"),
    (_row("V25", "dgx-h100", AR, 128, 1, 2, "seconds", 5.56e-6, "nccl#1259 (CUDA graph)", "nvls"),
     "NVLS latency is NCCL's tuner constant (25 us) so that auto picks what NCCL picks"),
    (_row("V10", "dgx-h100", AR, 58 * 10**6, 1, 8, "busbw", 150.0, "scaling-book gpus.md figure"),
     "JAX with SHARP off, read from a figure; mid-size regime"),
)
# fmt: on


def group_for(row: Measurement, profile: FabricProfile) -> list[GpuSlot]:
    per_domain = row.nodes_per_domain or max(
        1, profile.gpus_per_nvlink_domain // profile.gpus_per_node
    )
    return [
        GpuSlot(
            node=f"n{n}",
            gpu=j,
            rail=j * profile.nics_per_node // profile.gpus_per_node,
            nvlink_domain=f"d{n // per_domain}",
            rail_group="su0",
            spine="s0",
        )
        for n in range(row.nodes)
        for j in range(row.gpus_per_node)
    ]


@dataclass(frozen=True)
class Comparison:
    row: Measurement
    predicted: float
    algorithm: str
    error: float  # relative error (bandwidth rows) or time ratio >= 1 (latency rows)

    @property
    def passed(self) -> bool:
        return self.error <= (LATENCY_RATIO_LIMIT if self.row.latency else ROW_LIMIT)


def compare(row: Measurement) -> Comparison:
    profile = get_profile(row.fabric)
    est = estimate_collective(
        Collective(row.collective),
        row.size_bytes,
        group_for(row, profile),
        profile,
        algorithm=row.algorithm,
    )
    predicted = est.busbw_gb_per_s if row.metric == "busbw" else est.seconds
    if row.latency:
        error = max(predicted / row.measured, row.measured / predicted)
    else:
        error = abs(predicted - row.measured) / row.measured
    return Comparison(row, predicted, f"{est.algorithm}/{est.protocol}", error)


def bandwidth_median(comparisons: list[Comparison], *, held_out: bool = False) -> float:
    """Median relative error over bandwidth rows (optionally only rows no parameter came from)."""
    return statistics.median(
        c.error for c in comparisons if not c.row.latency and not (held_out and c.row.calibrates)
    )


def _value(metric: str, value: float) -> str:
    return f"{value:8.1f} GB/s" if metric == "busbw" else f"{value * 1e6:8.2f} us  "


def _line(c: Comparison) -> str:
    r = c.row
    err = f"{c.error:.2f}x" if r.latency else f"{c.error * 100:.1f}%"
    cal = f" [calibration: {r.calibrates}]" if r.calibrates else ""
    return (
        f"{r.id:<9}{r.fabric:<12}{r.collective:<11}{r.size_bytes:>12} "
        f"{r.nodes * r.gpus_per_node:>5} {c.algorithm:<17}{_value(r.metric, r.measured):>14}"
        f"{_value(r.metric, c.predicted):>14}{err:>9}  {'ok' if c.passed else 'NO'}"
        f"  {r.source}{cal}"
    )


def render(comparisons: list[Comparison], reference: list[tuple[Comparison, str]]) -> str:
    header = (
        f"{'id':<9}{'fabric':<12}{'collective':<11}{'size (B)':>12} {'ranks':>5} {'algorithm':<17}"
        f"{'measured':>14}{'predicted':>14}{'error':>9}  ok  source"
    )
    lines = [header, *(_line(c) for c in comparisons)]
    bandwidth = [c.error for c in comparisons if not c.row.latency]
    latency = [c.error for c in comparisons if c.row.latency]
    lines.append(
        f"bandwidth rows ({len(bandwidth)}): median |error| "
        f"{bandwidth_median(comparisons) * 100:.1f}% (limit {MEDIAN_LIMIT * 100:.0f}%), "
        f"worst {max(bandwidth) * 100:.1f}% (limit {ROW_LIMIT * 100:.0f}%); held-out rows only: "
        f"median {bandwidth_median(comparisons, held_out=True) * 100:.1f}%"
    )
    lines.append(
        f"latency rows ({len(latency)}): worst {max(latency):.2f}x (limit {LATENCY_RATIO_LIMIT}x)"
    )
    lines.append("reference only (not asserted):")
    for c, why in reference:
        lines.append(
            f"  {c.row.id:<9}measured {_value(c.row.metric, c.row.measured).strip()}, predicted "
            f"{_value(c.row.metric, c.predicted).strip()} ({c.algorithm}): {why} [{c.row.source}]"
        )
    return "\n".join(lines)


def run() -> tuple[list[Comparison], list[tuple[Comparison, str]]]:
    return [compare(r) for r in ROWS], [(compare(r), why) for r, why in REFERENCE_ONLY]
