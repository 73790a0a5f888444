"""``up``, ``down`` and ``status`` of the local control plane.

State lives in ``$FABRICFIT_STATE_DIR`` (default ``~/.cache/fabricfit/cluster``): certificates,
kubeconfig, etcd data, logs, and ``state.json`` with every pid and port we started. ``down``
reads that file and stops exactly those processes, then removes the directory.

``up`` takes a ``Tuning``: the defaults suit the test suite (a few hundred nodes); ``SCALE`` is
for tens of thousands of kwok nodes (the scale benchmark): more requests in flight, client rate
limits of the controller-manager and scheduler raised, no audit log, and node leases renewed
rarely (kwok renews every lease at a quarter of its duration: 12,800 nodes with 40 s leases are
1,280 writes a second).

The optional controllers (``up --with``, started by ``install``) are recorded like the five
core components, plus their version and ports in ``controllers``; they count in the health.

Besides the five control-plane components, ``state.json`` lists *attached* processes: clients
that run against the cluster and should live and die with it (the demo's operator). ``attach``
starts one and records it; ``down`` stops them before the control plane. They take no part in
the cluster's health.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fabricfit_dev.cluster import pki as pki_mod
from fabricfit_dev.cluster.binaries import Binaries
from fabricfit_dev.cluster.controllers import Controller, ControllerPorts, health_url
from fabricfit_dev.cluster.processes import (
    ClusterError,
    Started,
    check_port_free,
    client_context,
    free_port,
    http_ok,
    insecure_context,
    is_ours,
    start,
    stop,
    wait_until,
)

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
CORE: tuple[str, ...] = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
)
SERVICE_CIDR = "10.0.0.0/24"
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
"""


@dataclass(frozen=True)
class Tuning:
    """Flags for the size of the simulated cluster (0 keeps the component's own default)."""

    max_requests_inflight: int = 0  # kube-apiserver --max-requests-inflight
    max_mutating_requests_inflight: int = 0  # kube-apiserver --max-mutating-requests-inflight
    client_qps: int = 0  # --kube-api-qps of controller-manager and scheduler (burst twice that)
    node_lease_seconds: int = 40  # kwok's node leases; the controller-manager's grace period
    audit: bool = True  # kube-apiserver audit log (Metadata level for every request)
    kwok_parallelism: int = 0  # kwok's pod/node stage and lease workers

    def __post_init__(self) -> None:
        for name in (
            "max_requests_inflight",
            "max_mutating_requests_inflight",
            "client_qps",
            "kwok_parallelism",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.node_lease_seconds < 1:
            raise ValueError("node_lease_seconds must be at least 1")


DEFAULT_TUNING = Tuning()
SCALE = Tuning(
    max_requests_inflight=1600,
    max_mutating_requests_inflight=800,
    client_qps=1000,
    node_lease_seconds=1200,
    audit=False,
    kwok_parallelism=16,
)


def state_dir() -> Path:
    default = Path.home() / ".cache" / "fabricfit" / "cluster"
    return Path(os.environ.get("FABRICFIT_STATE_DIR", str(default)))


@dataclass
class Ports:
    etcd: int = 0
    etcd_peer: int = 0
    apiserver: int = 0
    controller_manager: int = 0
    scheduler: int = 0
    kwok: int = 0

    def assign(self, requested_apiserver: int | None) -> None:
        if requested_apiserver:
            check_port_free(requested_apiserver, "kube-apiserver")
        self.apiserver = requested_apiserver or free_port()
        for name in ("etcd", "etcd_peer", "controller_manager", "scheduler", "kwok"):
            setattr(self, name, free_port())


@dataclass
class State:
    directory: str
    ports: Ports
    processes: list[Started] = field(default_factory=list)
    attached: list[Started] = field(default_factory=list)
    started_at: float = 0.0
    kubernetes_version: str = ""
    #: Optional controllers (``up --with``); their processes are in ``processes`` too.
    controllers: list[Controller] = field(default_factory=list)

    @property
    def kubeconfig(self) -> Path:
        return Path(self.directory) / "admin.kubeconfig"

    def save(self) -> None:
        data = asdict(self)
        (Path(self.directory) / "state.json").write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, directory: Path) -> State | None:
        path = directory / "state.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        return cls(
            directory=data["directory"],
            ports=Ports(**data["ports"]),
            processes=[Started(**p) for p in data["processes"]],
            attached=[Started(**p) for p in data.get("attached", [])],
            started_at=data.get("started_at", 0.0),
            kubernetes_version=data.get("kubernetes_version", ""),
            controllers=[
                Controller(c["name"], c["version"], ControllerPorts(**c["ports"]))
                for c in data.get("controllers", [])
            ],
        )


def _etcd_args(b: Binaries, d: Path, p: Ports) -> list[str]:
    return [
        str(b.etcd),
        "--name=fabricfit",
        f"--data-dir={d / 'etcd'}",
        f"--listen-client-urls=http://127.0.0.1:{p.etcd}",
        f"--advertise-client-urls=http://127.0.0.1:{p.etcd}",
        f"--listen-peer-urls=http://127.0.0.1:{p.etcd_peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{p.etcd_peer}",
        f"--initial-cluster=fabricfit=http://127.0.0.1:{p.etcd_peer}",
        "--auto-compaction-retention=1",
        "--quota-backend-bytes=8589934592",
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def _apiserver_args(
    b: Binaries, d: Path, p: Ports, k: pki_mod.Pki, tuning: Tuning = DEFAULT_TUNING
) -> list[str]:
    audit = []
    if tuning.audit:
        (d / "audit-policy.yaml").write_text(AUDIT_POLICY)
        audit = [
            f"--audit-policy-file={d / 'audit-policy.yaml'}",
            f"--audit-log-path={d / 'logs' / 'audit.log'}",
            "--audit-log-maxsize=200",
            "--audit-log-maxbackup=1",
        ]
    inflight = [
        f"--{flag}={value}"
        for flag, value in (
            ("max-requests-inflight", tuning.max_requests_inflight),
            ("max-mutating-requests-inflight", tuning.max_mutating_requests_inflight),
        )
        if value
    ]
    return [
        str(b.kube_apiserver),
        f"--etcd-servers=http://127.0.0.1:{p.etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={p.apiserver}",
        f"--tls-cert-file={k.serving_cert}",
        f"--tls-private-key-file={k.serving_key}",
        f"--client-ca-file={k.ca_cert}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={k.sa_pub}",
        f"--service-account-signing-key-file={k.sa_key}",
        *audit,
        *inflight,
        f"--cert-dir={d / 'apiserver-certs'}",
    ]


def _component_args(binary: Path, d: Path, port: int, extra: list[str]) -> list[str]:
    kc = d / "admin.kubeconfig"
    return [
        str(binary),
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        *extra,
    ]


def _client_qps(tuning: Tuning) -> list[str]:
    if not tuning.client_qps:
        return []
    return [f"--kube-api-qps={tuning.client_qps}", f"--kube-api-burst={2 * tuning.client_qps}"]


def _kwok_config(d: Path, tuning: Tuning) -> list[str]:
    """A KwokConfiguration with the workers' parallelism, when the tuning sets one."""
    if not tuning.kwok_parallelism:
        return []
    n = tuning.kwok_parallelism
    path = d / "kwok-options.yaml"
    path.write_text(
        "apiVersion: config.kwok.x-k8s.io/v1alpha1\n"
        "kind: KwokConfiguration\n"
        "options:\n"
        f"  podPlayStageParallelism: {n}\n"
        f"  nodePlayStageParallelism: {n}\n"
        f"  nodeLeaseParallelism: {n}\n"
    )
    return [f"--config={path}"]


def _kwok_args(b: Binaries, d: Path, p: Ports, tuning: Tuning = DEFAULT_TUNING) -> list[str]:
    return [
        str(b.kwok),
        f"--kubeconfig={d / 'admin.kubeconfig'}",
        f"--config={b.kwok_stages}",
        *_kwok_config(d, tuning),
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_ANNOTATION}=fake",
        "--cidr=10.0.0.0/16",
        "--node-ip=10.0.0.1",
        f"--node-lease-duration-seconds={tuning.node_lease_seconds}",
        f"--server-address=127.0.0.1:{p.kwok}",
    ]


@dataclass(frozen=True)
class Command:
    """What a component runs: its argv, and its environment (None: this process's own)."""

    argv: list[str]
    env: dict[str, str] | None = None


def launch(
    state: State,
    name: str,
    command: Command,
    *,
    probe: Callable[[], bool],
    timeout: float,
    say: Callable[[str], None],
) -> None:
    say(f"starting {name}")
    log = Path(state.directory) / "logs" / f"{name}.log"
    started = start(name, command.argv, log, env=command.env)
    state.processes.append(started)
    state.save()
    wait_until(name, probe, started, timeout)
    say(f"{name} healthy (pid {started.pid})")


def up(
    binaries: Binaries,
    say: Callable[[str], None],
    apiserver_port: int | None = None,
    tuning: Tuning = DEFAULT_TUNING,
) -> State:
    """Start the control plane, or reuse the one already running (whatever its tuning)."""
    directory = state_dir()
    existing = State.load(directory)
    if existing is not None:
        if healthy(existing):
            say(
                f"a cluster is already running (API server on port {existing.ports.apiserver}); "
                "reusing it"
            )
            return existing
        say("found a stale cluster state; cleaning it up")
        down(say)
    return _start_all(binaries, directory, say, apiserver_port, tuning)


def _start_all(
    binaries: Binaries,
    directory: Path,
    say: Callable[[str], None],
    apiserver_port: int | None,
    tuning: Tuning,
) -> State:
    ports = Ports()
    ports.assign(apiserver_port)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "logs").mkdir(exist_ok=True)
    state = State(
        str(directory),
        ports,
        started_at=time.time(),
        kubernetes_version=binaries.kubernetes_version,
    )
    state.save()
    try:
        _start_components(state, binaries, directory, say, tuning)
    except BaseException:
        down(lambda _msg: None)
        raise
    return state


def _http_probe(url: str) -> Callable[[], bool]:
    return lambda: http_ok(url)


def _probes(state: State) -> dict[str, Callable[[], bool]]:
    """Health probe per component (loopback only)."""
    p = state.ports
    keys = Path(state.directory) / "pki"
    client = client_context(keys / "ca.crt", keys / "admin.crt", keys / "admin.key")
    insecure = insecure_context()
    local = "127.0.0.1"
    probes = {c.name: _http_probe(health_url(c.ports)) for c in state.controllers}
    return probes | {
        "etcd": lambda: http_ok(f"http://{local}:{p.etcd}/health", expect='"health":"true"'),
        "kube-apiserver": lambda: http_ok(
            f"https://{local}:{p.apiserver}/readyz", context=client, expect="ok"
        ),
        "kube-controller-manager": lambda: http_ok(
            f"https://{local}:{p.controller_manager}/healthz", context=insecure, expect="ok"
        ),
        "kube-scheduler": lambda: http_ok(
            f"https://{local}:{p.scheduler}/healthz", context=insecure, expect="ok"
        ),
        "kwok": lambda: http_ok(f"http://{local}:{p.kwok}/healthz"),
    }


def _start_components(
    state: State, b: Binaries, d: Path, say: Callable[[str], None], tuning: Tuning
) -> None:
    p = state.ports
    keys = pki_mod.generate(d / "pki")
    pki_mod.write_kubeconfig(d / "admin.kubeconfig", f"https://127.0.0.1:{p.apiserver}", keys)
    kcm_extra = [
        f"--root-ca-file={keys.ca_cert}",
        f"--service-account-private-key-file={keys.sa_key}",
        "--controllers=*",
        f"--node-monitor-grace-period={max(40, tuning.node_lease_seconds)}s",
        *_client_qps(tuning),
    ]
    components = [
        ("etcd", _etcd_args(b, d, p), 30.0),
        ("kube-apiserver", _apiserver_args(b, d, p, keys, tuning), 90.0),
        (
            "kube-controller-manager",
            _component_args(b.kube_controller_manager, d, p.controller_manager, kcm_extra),
            60.0,
        ),
        (
            "kube-scheduler",
            _component_args(b.kube_scheduler, d, p.scheduler, _client_qps(tuning)),
            60.0,
        ),
        ("kwok", _kwok_args(b, d, p, tuning), 60.0),
    ]
    probes = _probes(state)
    for name, argv, timeout in components:
        launch(state, name, Command(argv), probe=probes[name], timeout=timeout, say=say)


def component_health(state: State) -> dict[str, tuple[bool, bool]]:
    """name -> (process alive, health endpoint ok)."""
    probes = _probes(state)
    result: dict[str, tuple[bool, bool]] = {}
    for proc in state.processes:
        alive = is_ours(proc.pid, proc.binary)
        result[proc.name] = (alive, alive and probes[proc.name]())
    return result


def healthy(state: State) -> bool:
    """Every core component and every recorded controller runs and answers its probe."""
    health = component_health(state)
    expected = [*CORE, *(c.name for c in state.controllers)]
    return all(health.get(name) == (True, True) for name in expected)


def forget(state: State, name: str) -> None:
    """Drop the records of controller ``name`` (stopping its process if it still runs)."""
    for proc in [p for p in state.processes if p.name == name]:
        stop(proc.pid, proc.binary)
        state.processes.remove(proc)
    state.controllers = [c for c in state.controllers if c.name != name]
    state.save()


def down(say: Callable[[str], None]) -> bool:
    """Stop every process recorded in the state file (newest first) and remove the state."""
    directory = state_dir()
    state = State.load(directory)
    if state is None:
        if directory.exists():
            shutil.rmtree(directory, ignore_errors=True)
        return False
    for proc in [*reversed(state.attached), *reversed(state.processes)]:
        say(f"stopping {proc.name} (pid {proc.pid})")
        stop(proc.pid, proc.binary, marker=proc.marker)
    shutil.rmtree(directory, ignore_errors=True)
    return True


def attach(
    state: State, name: str, argv: list[str], env: dict[str, str] | None = None, marker: str = ""
) -> Started:
    """Start ``argv`` detached, log to ``logs/<name>.log`` and record it so ``down`` stops it.

    A process of the same name recorded earlier is stopped first (one instance per name).
    ``marker`` is a string its command line must contain to count as ours (for interpreters,
    whose executable alone says little).
    """
    detach(state, name)
    started = start(
        name, argv, Path(state.directory) / "logs" / f"{name}.log", env=env, marker=marker
    )
    state.attached.append(started)
    state.save()
    return started


def detach(state: State, name: str) -> bool:
    """Stop the attached process ``name`` if it runs; forget it. True if one was running."""
    running = False
    for proc in [p for p in state.attached if p.name == name]:
        running = running or is_ours(proc.pid, proc.binary, proc.marker)
        stop(proc.pid, proc.binary, marker=proc.marker)
        state.attached.remove(proc)
    state.save()
    return running


def attached_alive(state: State) -> dict[str, bool]:
    """name -> whether the attached process still runs."""
    return {p.name: is_ours(p.pid, p.binary, p.marker) for p in state.attached}


def require_state() -> State:
    state = State.load(state_dir())
    if state is None:
        raise ClusterError("no cluster is running (start one with: hack/cluster up)")
    return state
