"""Tools of the reliability tests (faults, fuzz, load, churn, privilege): an operator of the
test's own with a metrics port, its request counters, the API server's audit log, and the GPU
use that kube-scheduler actually bound."""

from __future__ import annotations

import contextlib
import json
import os
import re
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fabricfit_dev.cluster.processes import free_port
from fabricfit_dev.operator import OperatorProcess

REQUEST_LINE = re.compile(
    r'^fabricfit_kubernetes_api_requests_total\{code="(\d+)",resource="([^"]*)",verb="([A-Z]+)"\}'
    r" ([0-9.e+]+)$"
)
OPERATOR_AGENTS = ("kopf/", "aiohttp/")  # kopf's own client, and fabricfit's REST client
GPU = "nvidia.com/gpu"


class MeteredOperator(OperatorProcess):
    """``fabricfit run`` with ``--metrics-port``, so a test can read its request counters."""

    def __init__(self, kubeconfig: Path, log_dir: Path, *extra: str) -> None:
        self.metrics_port = free_port()
        super().__init__(kubeconfig, log_dir, "--metrics-port", str(self.metrics_port), *extra)

    def requests(self) -> Counter[tuple[str, str, int]]:
        """(verb, resource, code) -> count, from ``fabricfit_kubernetes_api_requests_total``."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as resp:
            text = resp.read().decode()
        counts: Counter[tuple[str, str, int]] = Counter()
        for line in text.splitlines():
            match = REQUEST_LINE.match(line)
            if match:
                code, resource, verb, value = match.groups()
                counts[(verb, resource, int(code))] = int(float(value))
        return counts

    def writes(self) -> Counter[tuple[str, str, int]]:
        """The requests that change something (everything but GET and WATCH): what a paused
        replica must never send. Its reads are its warm mirrors of nodes, pods and DRA objects."""
        return Counter({k: n for k, n in self.requests().items() if k[0] not in ("GET", "WATCH")})

    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def tracebacks(self) -> list[str]:
        """Tracebacks in the logs, each with the line that follows its last frame."""
        found = []
        lines = self.logs().splitlines()
        for i, line in enumerate(lines):
            if line.startswith("Traceback"):
                found.append("\n".join(lines[i : i + 40]))
        return found


@contextlib.contextmanager
def own_operator(
    session: OperatorProcess, kubeconfig: Path, log_dir: Path, *extra: str
) -> Iterator[MeteredOperator]:
    """Stop the session's operator, run a metered one instead, and restore the session's."""
    session.stop()
    mine = MeteredOperator(kubeconfig, log_dir, *extra)
    try:
        mine.start()
        yield mine
    finally:
        mine.stop()
        session.start()


def difference(
    after: Counter[tuple[str, str, int]], before: Counter[tuple[str, str, int]]
) -> Counter[tuple[str, str, int]]:
    return Counter({k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)})


def state_directory() -> Path | None:
    """The state directory of the hack/cluster control plane the tests use (None against a
    foreign cluster: then ``$KUBECONFIG`` names some other cluster's kubeconfig)."""
    raw = os.environ.get("FABRICFIT_STATE_DIR")
    if not raw or not (Path(raw) / "state.json").exists():
        return None
    given = os.environ.get("KUBECONFIG")
    if given and Path(given).resolve() != (Path(raw) / "admin.kubeconfig").resolve():
        return None
    return Path(raw)


def audit_log(directory: Path) -> Path:
    return directory / "logs" / "audit.log"


def audit_events(directory: Path, since_offset: int = 0) -> list[dict[str, Any]]:
    """Audit events (stage ResponseComplete) written after byte ``since_offset``."""
    path = audit_log(directory)
    events = []
    with path.open("rb") as handle:
        handle.seek(since_offset)
        for raw in handle:
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # a line being written
            if event.get("stage") == "ResponseComplete":
                events.append(event)
    return events


def audit_offset(directory: Path) -> int:
    path = audit_log(directory)
    return path.stat().st_size if path.exists() else 0


def by_operator(event: dict[str, Any], username: str | None = None) -> bool:
    """Whether the operator made the request (by user agent, and user when given)."""
    if username is not None and (event.get("user") or {}).get("username") != username:
        return False
    agent = str(event.get("userAgent") or "")
    return agent.startswith(OPERATOR_AGENTS) or "aiohttp" in agent


def gpus_in_use(core: Any, node_names: set[str]) -> dict[str, int]:
    """GPUs requested by non-terminal pods bound to each node, as kube-scheduler bound them."""
    used: Counter[str] = Counter()
    for pod in core.list_pod_for_all_namespaces().items:
        node = pod.spec.node_name
        if node not in node_names or pod.status.phase in ("Succeeded", "Failed"):
            continue
        for c in pod.spec.containers:
            limits = (c.resources.limits or {}) if c.resources else {}
            requests = (c.resources.requests or {}) if c.resources else {}
            used[node] += int(limits.get(GPU) or requests.get(GPU) or 0)
    return dict(used)
