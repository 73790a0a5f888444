"""The operator as a real process (``fabricfit run``) for end-to-end tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from helpers.waiting import wait_for


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class OperatorProcess:
    """Starts, stops and restarts ``fabricfit run --standalone`` against a kubeconfig."""

    def __init__(self, kubeconfig: Path, log_dir: Path, *extra: str) -> None:
        self.kubeconfig = kubeconfig
        self.log_dir = log_dir
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self._log: IO[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"operator-{self.starts}.log"

    def start(self) -> None:
        self.starts += 1
        port = free_port()
        self._log = self.log_path.open("wb")
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig), "PYTHONUNBUFFERED": "1"}
        argv = [sys.executable, "-m", "fabricfit", "run", "--standalone", "--resync-seconds", "2",
                "--liveness", f"http://127.0.0.1:{port}/healthz",
                # No metrics server unless a test asks for one (a later flag wins): parallel
                # sessions on one machine must not fight over the default port.
                "--metrics-port", "0", *self.extra]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        wait_for(
            lambda: b"Initial authentication has finished" in self.log_path.read_bytes(),
            timeout_seconds=60,
            what="the operator to start",
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None
        if self._log is not None:
            self._log.close()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def logs(self) -> str:
        return "\n".join(
            p.read_text(errors="replace") for p in sorted(self.log_dir.glob("operator-*.log"))
        )

    def restart(self) -> None:
        self.stop()
        time.sleep(0.5)
        self.start()
