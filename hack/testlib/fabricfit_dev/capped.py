"""Run the ``fabricfit`` CLI as a child process under a hard memory cap, and measure it.

The fuzz tests (``tests/unit/cli/test_fuzz_process.py``) and ``benchmarks/bad_input.py`` both
need what only a real process shows: memory that runs out, a terminal that cannot encode a
name, a device or a pipe as input. The child caps its own address space (``RLIMIT_AS``) before
the CLI starts (no ``preexec_fn``: it is not thread-safe) and writes its peak RSS (``VmHWM``,
this exec's own; ``wait4``'s ``ru_maxrss`` would include the forked parent's pages) to
``FABRICFIT_PEAK_FILE`` at exit; the wall time is measured around it, and a killer thread ends
a child that outlives its timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

MEMORY_CAP_BYTES: Final = 1 << 30
TIMEOUT_SECONDS: Final = 120.0

LAUNCHER: Final = (
    "import atexit, os, resource, runpy, sys\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_CAP_BYTES}, {MEMORY_CAP_BYTES}))\n"
    "def peak():\n"
    "    with open('/proc/self/status') as s, open(os.environ['FABRICFIT_PEAK_FILE'], 'w') as f:\n"
    "        f.write(next(line for line in s if line.startswith('VmHWM')).split()[1])\n"
    "atexit.register(peak)\n"
    "sys.argv = ['fabricfit', *sys.argv[1:]]\n"
    "runpy.run_module('fabricfit', run_name='__main__')\n"
)


@dataclass(frozen=True)
class CappedRun:
    code: int
    stdout: str
    stderr: str
    seconds: float
    peak_mib: float


def read_peak_mib(path: Path) -> float:
    """The child's VmHWM in MiB (0 when it died before writing it)."""
    try:
        return int(path.read_text() or 0) / 1024
    except (OSError, ValueError):
        return 0.0


def run_capped(
    args: Sequence[str],
    *,
    stdin: Any = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
    timeout_seconds: float = TIMEOUT_SECONDS,
) -> CappedRun:
    """``fabricfit ARGS`` in a child under :data:`MEMORY_CAP_BYTES`: exit code, output, wall
    seconds and peak RSS (a child killed at the timeout exits -9)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        peak_file = Path(tempfile.mkdtemp(prefix="fabricfit-peak-")) / "peak"
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, *args],
            stdin=stdin,
            stdout=out,
            stderr=err,
            env={**os.environ, **(env or {}), "FABRICFIT_PEAK_FILE": str(peak_file)},
        )
        killer = threading.Timer(timeout_seconds, child.kill)
        killer.start()
        _, status = os.waitpid(child.pid, 0)
        killer.cancel()
        seconds = time.perf_counter() - start
        child.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = [stream.read().decode("utf-8", "replace") for stream in (out, err)]
        run = CappedRun(code, text[0], text[1], seconds, read_peak_mib(peak_file))
        peak_file.unlink(missing_ok=True)
        peak_file.parent.rmdir()
    return run
