"""hack/cluster up → status → up again (reuse) → down leaves no process of ours and no port held."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(ROOT / "hack" / "cluster")


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLUSTER, *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )


def port_free(port: int) -> bool:
    """True when nothing listens on the port (TIME_WAIT remnants do not count, as for Go's
    listeners, which set SO_REUSEADDR)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_up_status_reuse_down(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    env = {**os.environ, "FABRICFIT_STATE_DIR": str(state_dir)}
    env.pop("KUBECONFIG", None)

    first = run(["up"], env)
    assert first.returncode == 0, first.stderr
    last_line = first.stdout.strip().splitlines()[-1]
    assert last_line == f"KUBECONFIG={state_dir / 'admin.kubeconfig'}"
    state = json.loads((state_dir / "state.json").read_text())
    pids = [p["pid"] for p in state["processes"]]
    assert [p["name"] for p in state["processes"]] == [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
    ]

    status = run(["status"], env)
    assert status.returncode == 0, status.stdout
    assert status.stdout.count("healthy") == 5

    second = run(["up"], env)
    assert second.returncode == 0
    assert "already running" in second.stderr
    assert second.stdout.strip().splitlines()[-1] == last_line

    down = run(["down"], env)
    assert down.returncode == 0, down.stderr
    assert not state_dir.exists()
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists()
            or "Z" in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]
        )
    for port in state["ports"].values():
        assert port_free(port), f"port {port} still held after down"
