"""Start the optional controllers (``hack/cluster up --with kueue,jobset,lws,trainer``) on a running
local control plane.

For each controller, in :data:`controllers.ORDER`: issue its loopback webhook serving cert from
the cluster CA, write its Configuration file, apply its own CRDs (conversion webhooks pointed at
loopback) and wait until they are Established, start the binary built by ``hack/cluster build``
as a recorded process (so ``down`` stops it and ``status`` reports it), wait for its readiness
endpoint and its webhook server, then apply its webhook configurations. A controller that fails
is stopped and reported in one line naming it and its log; the rest of the cluster keeps running.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import ssl
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from fabricfit_dev.cluster import binaries as binaries_mod
from fabricfit_dev.cluster import controllers, controlplane, pki
from fabricfit_dev.cluster.processes import ClusterError, free_port, http_ok, is_ours, stop
from fabricfit_dev.waiting import WaitTimeoutError, wait_for

START_TIMEOUT_SECONDS = 180.0
KUBECTL_TIMEOUT_SECONDS = 120.0


def start_controllers(
    state: controlplane.State,
    names: Sequence[str],
    b: binaries_mod.Binaries,
    say: Callable[[str], None],
) -> None:
    """Start every controller in ``names`` that ``state`` does not already run healthily."""
    homes = binaries_mod.require_controllers(names)
    health = controlplane.component_health(state)
    for name in controllers.ORDER:
        if name not in names:
            continue
        if health.get(name) == (True, True):
            say(f"{name} is already running; reusing it")
            continue
        controlplane.forget(state, name)
        _start_one(state, name, homes[name], b, say)


def _start_one(
    state: controlplane.State,
    name: str,
    home: binaries_mod.ControllerHome,
    b: binaries_mod.Binaries,
    say: Callable[[str], None],
) -> None:
    d = Path(state.directory)
    log = d / "logs" / f"{name}.log"
    ports = controllers.ControllerPorts(
        webhook=free_port(), health=free_port(), metrics=free_port()
    )
    record = controllers.Controller(name=name, version=home.version, ports=ports)
    state.controllers.append(record)
    state.save()
    cert_dir = controllers.webhook_cert_dir(name, d)
    pki.issue_serving_cert(d / "pki", cert_dir, f"{name}-webhook")
    if name == "kueue":
        ensure_kueue_metrics_cert()
    ca = base64.b64encode((d / "pki" / "ca.crt").read_bytes()).decode()
    config_file = d / f"{name}-config.yaml"
    config_file.write_text(yaml.safe_dump(controllers.configuration(name, ports, cert_dir)))

    crds = controllers.localize(_load_all(home.crds), name, ports.webhook, ca)
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": controllers.NAMESPACES[name]}}  # fmt: skip
    _apply(b, state, name, "crds", [namespace, *crds], log=log)
    _wait_established(b, state, name, controllers.crd_names(crds), log)

    argv = controllers.command_line(home.binary, config_file, state.kubeconfig)
    probe = _ready_probe(ports, d / "pki" / "ca.crt")
    try:
        command = controlplane.Command(argv, controllers.environment(name, d, os.environ))
        controlplane.launch(
            state, name, command, probe=probe, timeout=START_TIMEOUT_SECONDS, say=say
        )
    except ClusterError:
        _stop_recorded(state, name)
        raise
    webhooks = controllers.localize(_load_all(home.webhooks), name, ports.webhook, ca)
    _apply(b, state, name, "webhooks", webhooks, log=log)


def ensure_kueue_metrics_cert(directory: Path = controllers.KUEUE_METRICS_CERT_DIR) -> None:
    """Kueue v0.19 exits unless a metrics cert exists at a fixed path when its internal cert
    management is off; write a self-signed loopback one there if none is valid."""
    if pki.still_valid(directory / "tls.crt", directory / "tls.key"):
        return
    try:
        pki.self_signed_serving_cert(directory, "kueue-metrics")
    except OSError as err:
        raise ClusterError(
            f"kueue needs a metrics certificate in {directory} (a path fixed in Kueue when its "
            f"internal cert management is off) and it cannot be written: {err.strerror}"
        ) from err


def _ready_probe(ports: controllers.ControllerPorts, ca: Path) -> Callable[[], bool]:
    context = ssl.create_default_context(cafile=str(ca))

    def probe() -> bool:
        return http_ok(controllers.health_url(ports)) and tls_accepts(ports.webhook, context)

    return probe


def tls_accepts(port: int, context: ssl.SSLContext) -> bool:
    """True if 127.0.0.1:``port`` completes a TLS handshake with a cert ``context`` trusts."""
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=2) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1"),
        ):
            return True
    except (OSError, ssl.SSLError):
        return False


def _load_all(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]


def _apply(
    b: binaries_mod.Binaries,
    state: controlplane.State,
    name: str,
    what: str,
    docs: list[dict[str, Any]],
    *,
    log: Path,
) -> None:
    manifest = Path(state.directory) / f"{name}-{what}.json"
    manifest.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
    # Server-side: Kueue's CRDs are larger than client-side apply's annotation limit.
    _kubectl(b, state, name, log, "apply", "--server-side", "--force-conflicts",
             f"--field-manager=hack-cluster-{name}", "-f", str(manifest))  # fmt: skip


def _kubectl(
    b: binaries_mod.Binaries, state: controlplane.State, name: str, log: Path, *args: str
) -> None:
    argv = [str(b.kubectl), f"--kubeconfig={state.kubeconfig}", *args]
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired as err:
        raise ClusterError(f"{name}: kubectl {args[0]} timed out (log: {log})") from err
    with log.open("a") as handle:
        handle.write(f"$ kubectl {' '.join(args)}\n{result.stdout}{result.stderr}")
    if result.returncode != 0:
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()] or ["no output"]
        raise ClusterError(f"{name}: kubectl {args[0]} failed: {lines[-1][:300]} (log: {log})")


def _wait_established(
    b: binaries_mod.Binaries, state: controlplane.State, name: str, crds: list[str], log: Path
) -> None:
    # Polled rather than `kubectl wait`, which fails on a CRD whose status is still empty.
    argv = [str(b.kubectl), f"--kubeconfig={state.kubeconfig}", "get", "-o", "json"]
    argv += [f"crd/{n}" for n in crds]

    def all_established() -> bool:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        return result.returncode == 0 and established(json.loads(result.stdout)) == set(crds)

    try:
        wait_for(all_established, KUBECTL_TIMEOUT_SECONDS, 0.5, f"{name}'s CRDs")
    except WaitTimeoutError as err:
        raise ClusterError(f"{name}: its CRDs were not Established after "
                           f"{KUBECTL_TIMEOUT_SECONDS:.0f} s (log: {log})") from err  # fmt: skip


def established(listing: dict[str, Any]) -> set[str]:
    """Names of the CRDs in a ``kubectl get -o json`` answer whose Established is True."""
    items = listing.get("items", [listing]) if listing.get("kind") == "List" else [listing]
    return {
        item["metadata"]["name"]
        for item in items
        if any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (item.get("status") or {}).get("conditions") or []
        )
    }


def _stop_recorded(state: controlplane.State, name: str) -> None:
    """Stop a controller that did not become ready; its records stay, so ``status`` reports it
    as not running and the next ``up`` starts afresh."""
    for proc in state.processes:
        if proc.name == name and is_ours(proc.pid, proc.binary):
            stop(proc.pid, proc.binary)
