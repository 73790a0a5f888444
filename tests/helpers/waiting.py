"""Polling with a deadline, for tests that watch a real cluster converge."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T | None],
    timeout_seconds: float = 60,
    interval_seconds: float = 0.25,
    what: str = "condition",
) -> T:
    """Poll until ``predicate()`` returns a truthy value, and return it."""
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_seconds)
    raise AssertionError(f"timed out after {timeout_seconds:.0f} s waiting for {what}")
