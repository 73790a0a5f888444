"""Detached processes with recorded pids: start, probe, stop exactly what we started."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from fabricfit_dev.waiting import WaitTimeoutError, wait_for

STOP_GRACE_SECONDS = 10.0
# How long a process that stopped running its binary may take to finish exiting (see settle).
EXIT_SETTLE_SECONDS = 5.0


class ClusterError(Exception):
    """A failure reported to the user as one line."""


@dataclass(frozen=True)
class Started:
    name: str
    pid: int
    binary: str
    log: str
    marker: str = ""  # a string the command line must contain (see ``is_ours``)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_port_free(port: int, what: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Go listeners set SO_REUSEADDR, so only a live listener (not TIME_WAIT) blocks them.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as err:
            raise ClusterError(f"port {port} for {what} is already in use on 127.0.0.1") from err


def start(
    name: str, argv: list[str], log: Path, env: dict[str, str] | None = None, marker: str = ""
) -> Started:
    """Start ``argv`` in its own session (so it outlives ``hack/cluster up``)."""
    handle = log.open("ab")
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    except OSError as err:
        raise ClusterError(f"cannot start {name} ({argv[0]}): {err.strerror}") from err
    finally:
        handle.close()
    return Started(name=name, pid=proc.pid, binary=argv[0], log=str(log), marker=marker)


def is_ours(pid: int, binary: str, marker: str = "") -> bool:
    """True if ``pid`` is alive and still runs ``binary`` (guards against reused pids), with
    ``marker`` in its command line when one is given."""
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return False
    zombie = stat.rsplit(")", 1)[-1].split()[0] == "Z"
    same = exe.removesuffix(" (deleted)") == os.path.realpath(binary)
    return not zombie and same and marker in cmdline


def stop(
    pid: int, binary: str, grace_seconds: float = STOP_GRACE_SECONDS, marker: str = ""
) -> None:
    """SIGTERM the process group, then SIGKILL after the grace period."""
    if not is_ours(pid, binary, marker):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    try:
        wait_for(lambda: not is_ours(pid, binary, marker), grace_seconds, 0.1, f"pid {pid}")
    except WaitTimeoutError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def http_ok(url: str, *, context: ssl.SSLContext | None = None, expect: str | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as resp:
            body = resp.read().decode(errors="replace")
    except (urllib.error.URLError, OSError, ValueError):
        return False
    return expect is None or expect in body


def insecure_context() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def client_context(ca: Path, cert: Path, key: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(ca))
    ctx.load_cert_chain(str(cert), str(key))
    return ctx


def wait_until(name: str, probe: object, started: Started, timeout_seconds: float) -> None:
    """Poll ``probe()`` until it is true; fail fast if the process died (with its last log line)."""
    assert callable(probe)

    def healthy() -> bool:
        if probe():
            return True
        if not is_ours(started.pid, started.binary):
            settle(started.pid)
            raise ClusterError(
                f"{name} exited during start-up: {last_line(Path(started.log))} "
                f"(log: {started.log})"
            )
        return False

    try:
        wait_for(healthy, timeout_seconds, 0.25, name)
    except WaitTimeoutError as err:
        raise ClusterError(
            f"{name} was not healthy after {timeout_seconds:.0f} s (log: {started.log})"
        ) from err


def settle(pid: int, timeout_seconds: float = EXIT_SETTLE_SECONDS) -> None:
    """Wait (briefly) until ``pid`` has exited, so that its last words are in its log. A process
    no longer running its binary may still be running something else: a wrapper script runs
    as its shell, and a binary that execs another has not written its error yet."""

    def exited() -> bool:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text(errors="replace")
        except OSError:
            return True
        return stat.rsplit(")", 1)[-1].split()[0] == "Z"

    with contextlib.suppress(WaitTimeoutError):
        wait_for(exited, timeout_seconds, 0.05, f"pid {pid} to exit")


def last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    return lines[-1][:300] if lines else "empty log"
