"""The operator as a real process (``fabricfit run``): its command line, a child
process the e2e tests start, stop and restart (``OperatorProcess``), and one attached to the
local control plane so that ``hack/cluster down`` stops it (``attach_operator``: the demo and the
side-by-side benchmark)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from fabricfit_dev.cluster import controlplane
from fabricfit_dev.cluster.processes import Started, free_port, http_ok, wait_until
from fabricfit_dev.waiting import wait_for

#: The name the attached operator is recorded under in the control plane's state.
ATTACHED_NAME = "fabricfit-operator"


def operator_argv(
    *,
    resync_seconds: float,
    liveness: str = "",
    metrics_port: int = 0,
    kubeconfig: Path | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """``fabricfit run`` in this interpreter, ``--standalone`` unless ``extra`` names a
    ``--peering`` object. Metrics port 0 (none) unless asked for, so that parallel sessions on
    one machine never fight over the default port; an empty ``liveness`` serves no probe.
    ``extra`` comes last, so its flags win."""
    alone = [] if "--peering" in extra else ["--standalone"]
    argv = [sys.executable, "-m", "fabricfit", "run", *alone]
    if kubeconfig is not None:
        argv += ["--kubeconfig", str(kubeconfig)]
    argv += ["--metrics-port", str(metrics_port), "--liveness", liveness,
             "--resync-seconds", f"{resync_seconds:g}"]  # fmt: skip
    return [*argv, *extra]


def operator_env(kubeconfig: Path) -> dict[str, str]:
    return {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1"}


def attach_operator(
    state: controlplane.State,
    *,
    resync_seconds: float,
    metrics_port: int = 0,
    extra: Sequence[str] = (),
) -> Started:
    """(Re)start the operator attached to the control plane of ``state`` (``down`` stops it)
    and wait until its liveness probe answers."""
    liveness = f"http://127.0.0.1:{free_port()}/healthz"
    argv = operator_argv(
        resync_seconds=resync_seconds,
        liveness=liveness,
        metrics_port=metrics_port,
        kubeconfig=state.kubeconfig,
        extra=extra,
    )
    env = operator_env(state.kubeconfig)
    started = controlplane.attach(state, ATTACHED_NAME, argv, env=env, marker="fabricfit")
    wait_until("the fabricfit operator", lambda: http_ok(liveness), started, 90)
    return started


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
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("wb")
        liveness = f"http://127.0.0.1:{port}/healthz"
        argv = operator_argv(resync_seconds=2, liveness=liveness, extra=self.extra)
        env = operator_env(self.kubeconfig)
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
