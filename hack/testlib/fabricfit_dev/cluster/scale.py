"""Helpers for large simulated clusters (``benchmarks/operator_scale.py``).

A SuperPOD-like fabric for any multiple of 32 nodes, objects created by many threads at once
with the server's answer left unparsed (the Python client spends milliseconds turning each reply
into objects), paged raw-JSON lists, the GPUs every bound pod holds against each node's
capacity, and the CPU time and memory of processes read from ``/proc``.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricfit_dev.cluster.fakenodes import FakeFabric

GPU = "nvidia.com/gpu"
NODES_PER_RAIL_GROUP = 32  # a DGX H100 SuperPOD scalable unit: 32 nodes on one set of rail leaves
MAX_RAIL_GROUPS_PER_SPINE = 8
TERMINAL = frozenset({"Succeeded", "Failed"})


def superpod_fabric(nodes: int, prefix: str, pool: str) -> FakeFabric:
    """``nodes`` DGX-H100 nodes: rail groups of 32 under spines of up to 8 rail groups."""
    if nodes < NODES_PER_RAIL_GROUP or nodes % NODES_PER_RAIL_GROUP:
        raise ValueError(f"--nodes must be a positive multiple of {NODES_PER_RAIL_GROUP}: {nodes}")
    groups = nodes // NODES_PER_RAIL_GROUP
    per_spine = max(d for d in range(1, MAX_RAIL_GROUPS_PER_SPINE + 1) if groups % d == 0)
    return FakeFabric(
        spines=groups // per_spine,
        rail_groups_per_spine=per_spine,
        nodes_per_rail_group=NODES_PER_RAIL_GROUP,
        nodes_per_rack=4,
        prefix=prefix,
        pool=pool,
    )


@dataclass(frozen=True)
class Created:
    """What ``create_all`` did: how many, how long, and the failures (first few kept)."""

    count: int
    seconds: float
    failures: int = 0
    errors: tuple[str, ...] = ()

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else 0.0


def create_all(
    create: Callable[[dict[str, Any]], object], bodies: Sequence[dict[str, Any]], workers: int
) -> Created:
    """Call ``create`` on every body from ``workers`` threads; errors are counted, not raised."""
    errors: list[str] = []

    def one(body: dict[str, Any]) -> bool:
        try:
            create(body)
        except Exception as err:  # counted and reported; the run goes on
            errors.append(f"{body.get('metadata', {}).get('name')}: {err}"[:300])
            return False
        return True

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        done = sum(pool.map(one, bodies))
    return Created(done, time.monotonic() - started, len(bodies) - done, tuple(errors[:5]))


def pages(fetch: Callable[[str], bytes]) -> Iterator[dict[str, Any]]:
    """Items of a paged list: ``fetch(continue_token)`` returns one page's raw JSON."""
    token = ""
    while True:
        page = json.loads(fetch(token))
        yield from page.get("items") or []
        token = (page.get("metadata") or {}).get("continue") or ""
        if not token:
            return


def gpus_of(pod: Mapping[str, Any]) -> int:
    """GPUs a pod holds: the larger of its containers' sum and any init container (as the
    scheduler counts them), limits where requests are absent."""

    def one(container: Mapping[str, Any]) -> int:
        res = container.get("resources") or {}
        value = (res.get("requests") or {}).get(GPU) or (res.get("limits") or {}).get(GPU) or 0
        return int(value)

    spec = pod.get("spec") or {}
    main = sum(one(c) for c in spec.get("containers") or [])
    init = max((one(c) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def holding(pod: Mapping[str, Any]) -> bool:
    """Bound, not finished, not being deleted: the pod holds its GPUs on its node."""
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    phase = (pod.get("status") or {}).get("phase")
    return bound and phase not in TERMINAL


@dataclass(frozen=True)
class Booking:
    """GPUs used per node by bound pods, against each node's allocatable GPUs."""

    used: Mapping[str, int]
    capacity: Mapping[str, int]

    @property
    def overbooked(self) -> dict[str, tuple[int, int]]:
        """node -> (used, allocatable) where bound pods hold more GPUs than the node has."""
        return {
            n: (u, self.capacity.get(n, 0))
            for n, u in self.used.items()
            if u > self.capacity.get(n, 0)
        }

    @property
    def held(self) -> int:
        return sum(min(u, self.capacity.get(n, 0)) for n, u in self.used.items())

    @property
    def total(self) -> int:
        return sum(self.capacity.values())


def allocatable_gpus(node: Mapping[str, Any]) -> int:
    return int(((node.get("status") or {}).get("allocatable") or {}).get(GPU, 0))


def booking(nodes: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]]) -> Booking:
    capacity = {
        str(n["metadata"]["name"]): int(
            ((n.get("status") or {}).get("allocatable") or {}).get(GPU, 0)
        )
        for n in nodes
    }
    used: Counter[str] = Counter()
    for pod in pods:
        if holding(pod):
            used[str(pod["spec"]["nodeName"])] += gpus_of(pod)
    return Booking(dict(used), capacity)


NOT_READY = "node.kubernetes.io/not-ready"


def ready(node: Mapping[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def taint_keys(node: Mapping[str, Any]) -> list[str]:
    return [str(t.get("key")) for t in (node.get("spec") or {}).get("taints") or []]


def untaint_ops(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    """JSON Patch lifting the not-ready taint of a node kwok reports Ready (what the
    controller-manager's node lifecycle controller does, which lifts ~20 a second on two busy
    cores); guarded by a ``test`` of the taints it read. Empty when there is nothing to do."""
    taints = list((node.get("spec") or {}).get("taints") or [])
    if not ready(node) or NOT_READY not in taint_keys(node):
        return []
    kept = [t for t in taints if t.get("key") != NOT_READY]
    return [
        {"op": "test", "path": "/spec/taints", "value": taints},
        {"op": "replace", "path": "/spec/taints", "value": kept},
    ]


def proc_status_kib(pid: int, key: str, proc: Path = Path("/proc")) -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` (VmRSS, VmHWM), 0 if the process is gone."""
    try:
        text = (proc / str(pid) / "status").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith(f"{key}:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float:
    """User + system CPU seconds of a process (``/proc/<pid>/stat``), 0 if it is gone."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class CpuMeter:
    """CPU seconds per named process between ``mark`` calls (phases of a run)."""

    pids: Mapping[str, int]
    proc: Path = Path("/proc")
    _last: dict[str, float] = field(default_factory=dict)
    phases: list[tuple[str, float, dict[str, float]]] = field(default_factory=list)
    _since: float = 0.0

    def start(self) -> None:
        self._last = {name: cpu_seconds(pid, self.proc) for name, pid in self.pids.items()}
        self._since = time.monotonic()

    def mark(self, phase: str) -> dict[str, float]:
        """CPU seconds each process used since the previous mark, recorded as ``phase``."""
        now = {name: cpu_seconds(pid, self.proc) for name, pid in self.pids.items()}
        used = {name: now[name] - self._last.get(name, 0.0) for name in now}
        wall = time.monotonic() - self._since
        self.phases.append((phase, wall, used))
        self._last, self._since = now, time.monotonic()
        return used


class RawApi:
    """Plain JSON over one pooled HTTPS connection set, credentials from a kubeconfig.

    Thread-safe (urllib3's pool); replies stay bytes/dicts, never client models.
    """

    def __init__(self, kubeconfig: Path, pool_size: int = 64) -> None:
        import urllib3
        from kubernetes import client, config

        cfg = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), client_configuration=cfg
        )
        self.host = str(cfg.host).rstrip("/")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        keys = dict(cfg.api_key or {})
        token = keys.get("authorization") or keys.get("BearerToken")
        if token:
            self.headers["Authorization"] = str(token)
        self.http = urllib3.PoolManager(
            maxsize=pool_size,
            block=True,
            cert_file=cfg.cert_file,
            key_file=cfg.key_file,
            ca_certs=cfg.ssl_ca_cert,
            cert_reqs="CERT_REQUIRED" if cfg.verify_ssl else "CERT_NONE",
        )

    def request(
        self, method: str, path: str, body: object = None, query: Mapping[str, str] | None = None
    ) -> tuple[int, bytes]:
        from urllib.parse import urlencode

        url = self.host + path + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode()
        resp = self.http.request(method, url, body=data, headers=self.headers, timeout=120)
        return resp.status, resp.data

    def create(self, path: str, body: Mapping[str, Any]) -> None:
        status, data = self.request("POST", path, body)
        if status >= 300:
            raise RuntimeError(f"POST {path}: {status} {data[:200]!r}")

    def patch(self, path: str, ops: Sequence[Mapping[str, Any]]) -> int:
        """A JSON Patch; returns the status (409/422 when a ``test`` op failed)."""
        from urllib.parse import quote

        url = self.host + quote(path)
        headers = {**self.headers, "Content-Type": "application/json-patch+json"}
        resp = self.http.request(
            "PATCH", url, body=json.dumps(list(ops)).encode(), headers=headers, timeout=120
        )
        return int(resp.status)

    def delete(self, path: str) -> int:
        status, _ = self.request("DELETE", path)
        return status

    def list(self, path: str, selector: str = "") -> list[dict[str, Any]]:
        def fetch(token: str) -> bytes:
            query = {"limit": "2000"}
            if token:
                query["continue"] = token
            if selector:
                query["labelSelector"] = selector
            status, data = self.request("GET", path, query=query)
            if status != 200:
                raise RuntimeError(f"GET {path}: {status} {data[:200]!r}")
            return data

        return list(pages(fetch))

    def watch(
        self, path: str, on_event: Callable[[str, dict[str, Any]], None], stop: Callable[[], bool]
    ) -> None:
        """Call ``on_event(type, object)`` for every event of ``path`` (from now) until
        ``stop()``. Reconnects from the last resourceVersion seen; after an error it lists
        again and passes every object on as ``ADDED`` (their state, seen late)."""
        import urllib3

        version = ""
        while not stop():
            try:
                if not version:
                    _status, data = self.request("GET", path)
                    listed = json.loads(data)
                    for item in listed.get("items") or []:
                        on_event("ADDED", item)
                    version = listed["metadata"]["resourceVersion"]
                version = self._watch_once(path, version, on_event, stop)
            except (urllib3.exceptions.HTTPError, OSError, ValueError, KeyError):
                version = ""
                time.sleep(0.5)

    def _watch_once(
        self,
        path: str,
        version: str,
        on_event: Callable[[str, dict[str, Any]], None],
        stop: Callable[[], bool],
    ) -> str:
        from urllib.parse import urlencode

        query = {"watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": "60"}
        url = f"{self.host}{path}?{urlencode({**query, 'resourceVersion': version})}"
        resp = self.http.request(
            "GET", url, headers=self.headers, preload_content=False, timeout=None
        )
        try:
            buffer = b""
            for chunk in resp.stream(65536):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    version = self._event(line, version, on_event)
                if stop():
                    break
        finally:
            resp.release_conn()
        return version

    @staticmethod
    def _event(line: bytes, version: str, on_event: Callable[[str, dict[str, Any]], None]) -> str:
        if not line.strip():
            return version
        event = json.loads(line)
        if event.get("type") == "ERROR":
            return ""  # expired: list again
        obj = event.get("object") or {}
        if event.get("type") != "BOOKMARK":
            on_event(str(event.get("type")), obj)
        return str((obj.get("metadata") or {}).get("resourceVersion") or version)
