"""The published nccl-tests logs under tests/fixtures/nccl-tests and their manifest agree.

Every file in SOURCES.yaml exists, parses, and says what the manifest says (collective, ranks,
nodes, GPUs per node, NCCL version) wherever the log carries it; every log has an entry with a
source, hardware, preset and quality note.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit.calibrate.logs import parse_log
from fabricfit.cost.collectives import Collective

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-tests"
PRESETS = {
    "dgx-a100",
    "dgx-h100",
    "dgx-h200",
    "dgx-b200",
    "gb200-nvl72",
    "aws-p5",
    "gcp-a3-mega",
    "gcp-a4",
    "azure-nd-h100-v5",
    "oci-bm-gpu4-8",
}
REQUIRED = ("source", "hardware", "nodes", "gpus_per_node", "collective", "preset", "quality")


def manifest() -> dict[str, dict[str, Any]]:
    document = yaml.safe_load((FIXTURES / "SOURCES.yaml").read_text())
    entries: list[dict[str, Any]] = document["files"]
    by_file = {str(e["file"]): e for e in entries}
    assert len(by_file) == len(entries), "a file is listed twice"
    return by_file


ENTRIES = sorted(manifest().items())


def test_every_log_is_in_the_manifest() -> None:
    on_disk = {p.name for p in FIXTURES.iterdir() if p.suffix == ".log"}
    assert on_disk == set(manifest()), "logs and SOURCES.yaml entries differ"


@pytest.mark.parametrize(("name", "entry"), ENTRIES, ids=[n for n, _ in ENTRIES])
def test_entry_is_complete(name: str, entry: dict[str, Any]) -> None:
    missing = [key for key in REQUIRED if not entry.get(key)]
    assert not missing, f"{name}: missing {missing}"
    assert entry["preset"] in PRESETS
    assert {"gpu", "nic", "fabric"} <= set(entry["hardware"])
    assert entry["header"] in ("complete", "partial", "none")
    assert entry["source"].startswith("https://github.com/")


@pytest.mark.parametrize(("name", "entry"), ENTRIES, ids=[n for n, _ in ENTRIES])
def test_log_parses_and_agrees_with_the_manifest(name: str, entry: dict[str, Any]) -> None:
    collective = Collective(entry["collective"])
    log = parse_log((FIXTURES / name).read_text(), name, collective)
    assert log.rows
    assert log.collective is collective
    if entry["header"] == "none":  # the source quotes the table only
        assert (log.ranks, log.nodes) == (None, None)
    else:
        assert log.ranks == entry["nodes"] * entry["gpus_per_node"]
    if entry["header"] == "complete":
        assert (log.nodes, log.gpus_per_node) == (entry["nodes"], entry["gpus_per_node"])
    elif entry["header"] == "partial":
        assert log.nodes is None
    if log.nccl_version is not None:
        assert log.nccl_version == entry["nccl_version"]
    sizes = [row.size_bytes for row in log.rows]
    assert sizes == sorted(sizes), "rows of one run grow in size"


def bus_factor(collective: Collective, ranks: int) -> float:
    """nccl-tests' busbw/algbw ratio (its doc/PERFORMANCE.md)."""
    if collective is Collective.ALL_REDUCE:
        return 2 * (ranks - 1) / ranks
    if collective in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER, Collective.ALL_TO_ALL):
        return (ranks - 1) / ranks
    return 1.0


@pytest.mark.parametrize(("name", "entry"), ENTRIES, ids=[n for n, _ in ENTRIES])
def test_numbers_are_consistent_as_nccl_tests_prints_them(name: str, entry: dict[str, Any]) -> None:
    """algbw = size / time and busbw = algbw x factor on every row, to rounding: a copied number
    that was mistyped or edited breaks the identity."""
    collective = Collective(entry["collective"])
    factor = bus_factor(collective, entry["nodes"] * entry["gpus_per_node"])
    for row in parse_log((FIXTURES / name).read_text(), name, collective).rows:
        groups = [(row.out_time_us, row.out_algbw_gb_per_s, row.out_busbw_gb_per_s)]
        if row.in_time_us is not None:
            assert row.in_algbw_gb_per_s is not None and row.in_busbw_gb_per_s is not None
            groups.append((row.in_time_us, row.in_algbw_gb_per_s, row.in_busbw_gb_per_s))
        for time_us, algbw, busbw in groups:
            if time_us > 0:
                expected = row.size_bytes / time_us / 1e3
                assert abs(algbw - expected) <= 0.006 + 0.002 * expected, (name, row.line)
            assert abs(busbw - algbw * factor) <= 0.0051 * (1 + factor) + 0.003 * busbw, (
                name,
                row.line,
            )
