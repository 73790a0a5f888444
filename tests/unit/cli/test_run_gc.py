"""fabricfit run collects young objects rarely (a large cluster's heap is mostly long-lived)."""

from __future__ import annotations

import gc

from fabricfit.cli.run import GC_THRESHOLDS, tune_gc


def test_run_raises_the_collector_thresholds() -> None:
    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert GC_THRESHOLDS[0] > before[0]
    finally:
        gc.set_threshold(*before)
