"""Credentials of a ServiceAccount, for tests that act exactly as the chart's identities."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml


def sa_kubeconfig(admin: Path, core: Any, namespace: str, account: str, out: Path) -> Path:
    """A kubeconfig for ``account`` with a bearer token from the TokenRequest API."""
    request = {"spec": {"expirationSeconds": 3600}}
    token = core.create_namespaced_service_account_token(account, namespace, request).status.token
    config = yaml.safe_load(admin.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == context["context"]["cluster"])
    server = cluster["cluster"]["server"]
    ca = cluster["cluster"].get("certificate-authority-data")
    if ca is None:
        ca = base64.b64encode(Path(cluster["cluster"]["certificate-authority"]).read_bytes())
        ca = ca.decode()
    out.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": server, "certificate-authority-data": ca}}
                ],
                "users": [{"name": account, "user": {"token": token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "c", "user": account}}],
                "current-context": "sa",
            }
        )
    )
    return out
