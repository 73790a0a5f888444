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
