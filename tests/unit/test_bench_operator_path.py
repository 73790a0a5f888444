"""The in-memory operator-path benchmark runs end to end on a small cluster (the 12,800-node run
is ``benchmarks/operator_path.py`` without options)."""

from __future__ import annotations

import asyncio

import pytest

import operator_path as bench  # benchmarks/ is on the path (pytest: pythonpath)


def test_small_run_plans_every_job_and_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--nodes", "64", "--burst", "4", "--big", "64,128"]) == 0
    table = capsys.readouterr().out
    for row in ("64-GPU job", "128-GPU job", "4 small jobs", "resync of each", "peak RSS"):
        assert row in table


def test_listing_pages_like_the_api_server() -> None:
    items = [{"metadata": {"name": str(i)}} for i in range(5)]
    listing = bench.Listing(items)
    first = asyncio.run(listing.request("GET", "/api/v1/nodes?limit=2"))
    assert [i["metadata"]["name"] for i in first["items"]] == ["0", "1"]
    token = first["metadata"]["continue"]
    last = asyncio.run(listing.request("GET", f"/api/v1/nodes?limit=4&continue={token}"))
    assert [i["metadata"]["name"] for i in last["items"]] == ["2", "3", "4"]
    assert "continue" not in last["metadata"]
