"""The one wait loop of the test library: poll until something holds, with a deadline.

Tests, the demo, the benchmarks and the control-plane harness all wait on a cluster (or a
process) to converge; they all call ``wait_for``. What differs between them is expressed through
it, not beside it:

- the value: ``wait_for`` returns the predicate's first truthy answer (the bound nodes, the
  topology that reports Placed), so a caller polls and reads in one call;
- giving up early: the predicate may raise (a process that died, a spec the operator rejected),
  and that error reaches the caller as it is;
- the message: ``what`` names what was awaited, or is a function asked only at the deadline for
  what the wait last saw (the last reason, how many nodes are still not Ready);
- a timeout that is not a failure (a drain measured up to its limit, a process given its grace
  period before SIGKILL): the caller catches ``WaitTimeoutError``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeoutError(AssertionError):
    """A wait ran out of time. An AssertionError, so a test whose wait times out fails as the
    check it is; the demo and the benchmarks report it in one line."""


def wait_for(
    predicate: Callable[[], T | None],
    timeout_seconds: float = 60,
    interval_seconds: float = 0.25,
    what: str | Callable[[], str] = "condition",
) -> T:
    """Poll until ``predicate()`` returns a truthy value, and return it; ``WaitTimeoutError`` after
    ``timeout_seconds`` (``what`` names what was awaited, or says it when called)."""
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_seconds)
    awaited = what() if callable(what) else what
    raise WaitTimeoutError(f"timed out after {timeout_seconds:.0f} s waiting for {awaited}")
