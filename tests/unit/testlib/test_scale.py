"""Helpers of the scale benchmark (fabricfit_dev.cluster.scale) and the control plane's Tuning."""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fabricfit_dev.cluster import controlplane, scale
from fabricfit_dev.cluster.binaries import Binaries
from fabricfit_dev.cluster.controlplane import SCALE, Ports, Tuning
from fabricfit_dev.cluster.fakenodes import NATIVE, node_manifests


@pytest.mark.parametrize(
    ("nodes", "spines", "per_spine"), [(12800, 50, 8), (6400, 25, 8), (3200, 20, 5), (32, 1, 1)]
)
def test_superpod_fabric_has_rail_groups_of_32(nodes: int, spines: int, per_spine: int) -> None:
    fabric = scale.superpod_fabric(nodes, prefix="p", pool="p")
    assert (fabric.spines, fabric.rail_groups_per_spine, fabric.node_count) == (
        spines,
        per_spine,
        nodes,
    )
    if nodes <= 3200:
        groups = Counter(
            m["metadata"]["labels"][NATIVE + "rail-group"] for m in node_manifests(fabric)
        )
        assert set(groups.values()) == {32}
        assert len(groups) == nodes // 32


@pytest.mark.parametrize("nodes", [0, 31, 100, -32])
def test_superpod_fabric_refuses_other_counts(nodes: int) -> None:
    with pytest.raises(ValueError, match="multiple of 32"):
        scale.superpod_fabric(nodes, prefix="p", pool="p")


def test_create_all_counts_failures_and_keeps_going() -> None:
    seen: list[str] = []
    lock = threading.Lock()

    def create(body: dict[str, Any]) -> None:
        with lock:
            seen.append(body["metadata"]["name"])
        if body["metadata"]["name"].endswith("3"):
            raise RuntimeError("409 conflict")

    bodies = [{"metadata": {"name": f"n{i}"}} for i in range(20)]
    made = scale.create_all(create, bodies, workers=4)
    assert sorted(seen) == sorted(b["metadata"]["name"] for b in bodies)
    assert (made.count, made.failures) == (18, 2)
    assert all("409 conflict" in e for e in made.errors)
    assert made.rate > 0


def test_pages_follows_continue_tokens() -> None:
    book = {
        "": {"items": [1, 2], "metadata": {"continue": "a"}},
        "a": {"items": [3], "metadata": {"continue": "b"}},
        "b": {"items": [], "metadata": {}},
    }
    asked: list[str] = []

    def fetch(token: str) -> bytes:
        asked.append(token)
        return json.dumps(book[token]).encode()

    assert list(scale.pages(fetch)) == [1, 2, 3]
    assert asked == ["", "a", "b"]


def pod(node: str | None, gpus: int, phase: str = "Running", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "resources": {"limits": {scale.GPU: str(gpus)}}}],
        **extra,
    }
    if node:
        spec["nodeName"] = node
    return {"spec": spec, "status": {"phase": phase}}


def node(name: str, gpus: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": {scale.GPU: str(gpus)}}}


def test_gpus_of_sums_containers_and_takes_the_larger_init() -> None:
    two = {
        "spec": {
            "containers": [
                {"resources": {"requests": {scale.GPU: "2"}, "limits": {scale.GPU: "2"}}},
                {"resources": {"limits": {scale.GPU: "3"}}},
                {"resources": {}},
            ],
            "initContainers": [{"resources": {"limits": {scale.GPU: "8"}}}],
        }
    }
    assert scale.gpus_of(two) == 8
    assert scale.gpus_of(pod("n", 4)) == 4
    assert scale.gpus_of({"spec": {}}) == 0


def test_booking_finds_nodes_over_capacity_from_bound_live_pods_only() -> None:
    nodes = [node("a", 8), node("b", 8), node("c", 8)]
    pods = [
        pod("a", 8),
        pod("a", 1),  # a: 9 of 8
        pod("b", 4),
        pod("b", 4, phase="Pending"),  # bound, not started: still holds
        pod("b", 8, phase="Succeeded"),  # finished: holds nothing
        pod(None, 8, phase="Pending"),  # unbound: holds nothing
        pod("c", 2),
    ]
    book = scale.booking(nodes, pods)
    assert book.overbooked == {"a": (9, 8)}
    assert (book.held, book.total) == (8 + 8 + 2, 24)
    assert scale.booking(nodes, pods[1:]).overbooked == {}


def write_proc(tmp: Path, pid: int, utime: int, stime: int, rss: int, hwm: int) -> None:
    d = tmp / str(pid)
    d.mkdir(parents=True, exist_ok=True)
    # The command name may hold spaces and parentheses; fields count from the last ')'.
    rest = ["S", *["0"] * 10, str(utime), str(stime), *["0"] * 30]
    (d / "stat").write_text(f"{pid} (py thon (x)) {' '.join(rest)}\n")
    (d / "status").write_text(f"Name:\tpython\nVmHWM:\t{hwm} kB\nVmRSS:\t{rss} kB\n")


def test_proc_readers_parse_stat_and_status(tmp_path: Path) -> None:
    write_proc(tmp_path, 7, utime=250, stime=50, rss=1024, hwm=4096)
    tick = os.sysconf("SC_CLK_TCK")
    assert scale.cpu_seconds(7, tmp_path) == pytest.approx(300 / tick)
    assert scale.proc_status_kib(7, "VmRSS", tmp_path) == 1024
    assert scale.proc_status_kib(7, "VmHWM", tmp_path) == 4096
    assert scale.proc_status_kib(8, "VmRSS", tmp_path) == 0
    assert scale.cpu_seconds(8, tmp_path) == 0.0


def test_cpu_meter_reports_each_phase_difference(tmp_path: Path) -> None:
    tick = os.sysconf("SC_CLK_TCK")
    write_proc(tmp_path, 1, utime=100, stime=0, rss=1, hwm=1)
    write_proc(tmp_path, 2, utime=0, stime=0, rss=1, hwm=1)
    meter = scale.CpuMeter({"etcd": 1, "kwok": 2}, proc=tmp_path)
    meter.start()
    write_proc(tmp_path, 1, utime=100 + tick, stime=0, rss=1, hwm=1)
    write_proc(tmp_path, 2, utime=3 * tick, stime=tick, rss=1, hwm=1)
    first = meter.mark("nodes")
    assert first == pytest.approx({"etcd": 1.0, "kwok": 4.0})
    assert meter.mark("idle") == pytest.approx({"etcd": 0.0, "kwok": 0.0})
    assert [p[0] for p in meter.phases] == ["nodes", "idle"]


def test_watch_events_carry_the_resource_version() -> None:
    seen: list[tuple[str, str]] = []

    def on(type_: str, obj: dict[str, Any]) -> None:
        seen.append((type_, obj["metadata"]["name"]))

    line = json.dumps(
        {"type": "MODIFIED", "object": {"metadata": {"name": "x", "resourceVersion": "9"}}}
    )
    assert scale.RawApi._event(line.encode(), "5", on) == "9"
    bookmark = json.dumps({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "12"}}})
    assert scale.RawApi._event(bookmark.encode(), "9", on) == "12"
    gone = json.dumps({"type": "ERROR", "object": {"code": 410}})
    assert scale.RawApi._event(gone.encode(), "12", on) == ""
    assert scale.RawApi._event(b"  ", "12", on) == "12"
    assert seen == [("MODIFIED", "x")]


def binaries() -> Binaries:
    paths = {
        f: Path(f"/bin/{f}") for f in Binaries.__dataclass_fields__ if f != "kubernetes_version"
    }
    return Binaries(kubernetes_version="v1.36.3", **paths)


def pki(d: Path) -> controlplane.pki_mod.Pki:
    return controlplane.pki_mod.Pki(
        *(d / n for n in ("ca", "cak", "s", "sk", "a", "ak", "sa", "sp"))
    )


def test_default_tuning_keeps_the_suites_flags(tmp_path: Path) -> None:
    ports = Ports(1, 2, 3, 4, 5, 6)
    keys = pki(tmp_path)
    api = controlplane._apiserver_args(binaries(), tmp_path, ports, keys)
    assert any(a.startswith("--audit-log-path=") for a in api)
    assert not any("inflight" in a for a in api)
    kwok = controlplane._kwok_args(binaries(), tmp_path, ports)
    assert "--node-lease-duration-seconds=40" in kwok
    assert sum(a.startswith("--config=") for a in kwok) == 1
    assert controlplane._client_qps(Tuning()) == []


def test_scale_tuning_sets_limits_leases_and_kwok_workers(tmp_path: Path) -> None:
    ports = Ports(1, 2, 3, 4, 5, 6)
    keys = pki(tmp_path)
    api = controlplane._apiserver_args(binaries(), tmp_path, ports, keys, SCALE)
    assert "--max-requests-inflight=1600" in api
    assert "--max-mutating-requests-inflight=800" in api
    assert not any(a.startswith("--audit") for a in api)
    kwok = controlplane._kwok_args(binaries(), tmp_path, ports, SCALE)
    assert "--node-lease-duration-seconds=1200" in kwok
    options = (tmp_path / "kwok-options.yaml").read_text()
    assert f"--config={tmp_path / 'kwok-options.yaml'}" in kwok
    assert "podPlayStageParallelism: 16" in options and "nodeLeaseParallelism: 16" in options
    assert controlplane._client_qps(SCALE) == ["--kube-api-qps=1000", "--kube-api-burst=2000"]


@pytest.mark.parametrize(
    "bad", [{"client_qps": -1}, {"node_lease_seconds": 0}, {"max_requests_inflight": -5}]
)
def test_tuning_refuses_nonsense(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must"):
        Tuning(**bad)


def kwok_node(ready: str | None, taints: list[str]) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {
        "metadata": {"name": "n"},
        "spec": {"taints": [{"key": k, "effect": "NoSchedule"} for k in taints]},
        "status": {"conditions": conditions},
    }


def test_untaint_lifts_only_the_not_ready_taint_of_ready_nodes() -> None:
    node = kwok_node("True", [scale.NOT_READY, "gpu/dedicated"])
    ops = scale.untaint_ops(node)
    assert ops[0] == {"op": "test", "path": "/spec/taints", "value": node["spec"]["taints"]}
    assert ops[1]["value"] == [{"key": "gpu/dedicated", "effect": "NoSchedule"}]
    assert scale.untaint_ops(kwok_node("False", [scale.NOT_READY])) == []
    assert scale.untaint_ops(kwok_node(None, [scale.NOT_READY])) == []
    assert scale.untaint_ops(kwok_node("True", ["gpu/dedicated"])) == []
    assert scale.ready(kwok_node("True", [])) and not scale.ready(kwok_node("Unknown", []))
