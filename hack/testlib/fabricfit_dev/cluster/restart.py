"""Restart one component of a running local control plane (fault-injection tests use it).

``restart`` stops exactly the recorded process of that component (SIGTERM, then SIGKILL after
the grace period), starts it again with the argv it ran with (read from ``/proc/<pid>/cmdline``
before stopping it, so flags, ports and certificates stay the same), appends to the same log,
waits until its health probe answers and records the new pid in ``state.json``. The other
components keep running throughout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from fabricfit_dev.cluster import controlplane
from fabricfit_dev.cluster.processes import ClusterError, is_ours, start, stop, wait_until

RESTART_TIMEOUT_SECONDS = 90.0


def command_line(pid: int) -> list[str]:
    """The argv of a running process."""
    raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    return [part.decode() for part in raw.split(b"\0") if part]


def restart(
    state: controlplane.State,
    name: str,
    say: Callable[[str], None] = lambda _msg: None,
    *,
    down_seconds: float = 0.0,
) -> int:
    """Restart component ``name`` (e.g. ``kube-apiserver``); return its new pid.

    ``down_seconds``: how long to leave it stopped before starting it again.
    """
    import time

    index = next((i for i, p in enumerate(state.processes) if p.name == name), None)
    if index is None:
        raise ClusterError(f"no component named {name} in {state.directory}")
    old = state.processes[index]
    if not is_ours(old.pid, old.binary):
        raise ClusterError(f"{name} (pid {old.pid}) is not running")
    argv = command_line(old.pid)
    say(f"stopping {name} (pid {old.pid})")
    stop(old.pid, old.binary)
    if down_seconds > 0:
        time.sleep(down_seconds)
    started = start(name, argv, Path(old.log))
    state.processes[index] = dataclasses.replace(old, pid=started.pid)
    state.save()
    wait_until(name, controlplane._probes(state)[name], started, RESTART_TIMEOUT_SECONDS)
    say(f"{name} healthy again (pid {started.pid})")
    return started.pid
