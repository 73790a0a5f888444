"""Bad input to hack/cluster gives one clear line and a non-zero exit, never a hang."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = str(ROOT / "hack" / "cluster")


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLUSTER, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def test_unknown_verb_is_one_line_and_exit_2() -> None:
    result = run(["explode"])
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "unknown verb 'explode'" in result.stderr


def test_missing_verb_is_one_line_and_exit_2() -> None:
    result = run([])
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0


def test_help_lists_every_verb() -> None:
    result = run(["--help"])
    assert result.returncode == 0
    for verb in ("build", "up", "down", "status", "nodes"):
        assert f"hack/cluster {verb}" in result.stdout


def test_build_without_go_toolchain_says_so(tmp_path: Path) -> None:
    go = shutil.which("go")
    go_dir = str(Path(go).parent) if go else None
    path = ":".join(
        p
        for p in os.environ["PATH"].split(":")
        if p and p != go_dir and not (Path(p) / "go").exists()
    )
    env = {**os.environ, "PATH": path, "FABRICFIT_CACHE": str(tmp_path / "empty-cache")}
    result = run(["build"], env=env)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines()[-1] == (
        "hack/cluster build: no Go toolchain on PATH "
        "(Go 1.26+ is needed to build the control plane: kwok v0.8.0 and helm v3.22.0 require it)"
    )


def test_up_with_a_port_in_use_fails_with_one_line(tmp_path: Path) -> None:
    from fabricfit_dev.cluster import binaries

    if binaries.locate().missing():
        if os.environ.get("CI"):
            pytest.fail("CI must build the control-plane binaries before running tests")
        pytest.skip("control-plane binaries not built (make cluster-build)")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "FABRICFIT_STATE_DIR": str(tmp_path / "state")}
        result = run(["up", "--apiserver-port", str(port)], env=env)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"hack/cluster up: port {port} for kube-apiserver is already in use on 127.0.0.1"
    )
    assert not (tmp_path / "state").exists()


def test_status_without_cluster_reports_none(tmp_path: Path) -> None:
    env = {**os.environ, "FABRICFIT_STATE_DIR": str(tmp_path / "none")}
    result = run(["status"], env=env)
    assert result.returncode == 1
    assert "no cluster is running" in result.stdout


def test_nodes_with_bad_numbers_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "FABRICFIT_STATE_DIR": str(tmp_path / "none")}
    result = run(["nodes", "--nodes", "many"], env=env)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0


def test_up_with_an_unknown_controller_is_one_line_and_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "FABRICFIT_STATE_DIR": str(tmp_path / "none")}
    result = run(["up", "--with", "kueue,volcano"], env=env)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "hack/cluster: argument --with: unknown component 'volcano' for --with "
        "(expected any of: jobset, kueue, lws, trainer)"
    )
    assert not (tmp_path / "none").exists()


def test_build_with_an_unknown_argument_is_one_line_and_exit_2() -> None:
    result = run(["build", "--fast"])
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "hack/cluster build: unknown argument '--fast' (expected --with kueue,jobset,lws,trainer)"
    )


def test_build_with_an_unknown_component_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "FABRICFIT_CACHE": str(tmp_path / "cache")}
    result = run(["build", "--with", "volcano"], env=env)
    assert result.returncode != 0
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith("hack/cluster build: unknown component 'volcano'")
    )
