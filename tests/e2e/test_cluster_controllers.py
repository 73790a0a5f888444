"""hack/cluster up --with: the controllers join a running cluster, status reports them with their
version, a controller that cannot start is named in one line with its log, and down stops all."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from fabricfit_dev.cluster import binaries, controllers

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(ROOT / "hack" / "cluster")


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLUSTER, *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )


def gone(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    return not stat.exists() or "Z" in stat.read_text().split(")")[-1][:3]


def broken_cache(tmp_path: Path) -> Path:
    """A cache whose Kubernetes and JobSet builds are the real ones and whose "kueue" prints
    an error and exits, as a controller with a bad flag would."""
    real, fake = binaries.cache_dir(), tmp_path / "cache"
    fake.mkdir()
    for entry in real.iterdir():
        if entry.is_dir() and not entry.name.startswith(("kueue-", "cluster", "src")):
            (fake / entry.name).symlink_to(entry)
    kueue = binaries.locate_controller("kueue")
    home = fake / f"kueue-{kueue.version}"
    (home / "bin").mkdir(parents=True)
    for manifest in (kueue.crds, kueue.webhooks):
        (home / manifest.name).symlink_to(manifest)
    script = home / "bin" / "kueue"
    script.write_text("#!/bin/sh\necho 'flag provided but not defined: -config' >&2\nexit 2\n")
    script.chmod(0o755)
    return fake


def test_with_adds_reports_and_stops_controllers(tmp_path: Path) -> None:
    for name in ("kueue", "jobset"):
        if binaries.locate_controller(name).missing():
            pytest.skip(f"{name} not built (hack/cluster build --with kueue,jobset,lws)")
    state_dir = tmp_path / "state"
    env = {**os.environ, "FABRICFIT_STATE_DIR": str(state_dir)}
    env.pop("KUBECONFIG", None)

    up = run(["up", "--with", "jobset"], env)
    assert up.returncode == 0, up.stderr
    status = run(["status"], env)
    assert status.returncode == 0, status.stdout
    version = binaries.pinned_versions()[controllers.VERSION_KEYS["jobset"]]
    (line,) = [ln for ln in status.stdout.splitlines() if ln.split()[:1] == ["jobset"]]
    assert line.endswith(f"healthy ({version})")

    broken = {**env, "FABRICFIT_CACHE": str(broken_cache(tmp_path))}
    failed = run(["up", "--with", "kueue,jobset"], broken)
    assert failed.returncode == 1
    log = state_dir / "logs" / "kueue.log"
    assert failed.stderr.strip().splitlines()[-1] == (
        "hack/cluster up: kueue exited during start-up: "
        f"flag provided but not defined: -config (log: {log})"
    )
    assert "jobset is already running; reusing it" in failed.stderr
    after = run(["status"], env)
    assert after.returncode == 1
    assert any(
        ln.split()[:1] == ["kueue"] and "not running" in ln for ln in after.stdout.splitlines()
    )

    pids = [p["pid"] for p in json.loads((state_dir / "state.json").read_text())["processes"]]
    down = run(["down"], env)
    assert down.returncode == 0, down.stderr
    assert not state_dir.exists()
    assert all(gone(pid) for pid in pids)
