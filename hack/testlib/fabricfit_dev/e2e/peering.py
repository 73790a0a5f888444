"""kopf peering on the test cluster: the chart's peering CRDs, and the replicas a peering
object lists."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from fabricfit_dev.chart import of_kind, render


def apply_peering_crds(kubectl: list[str], tmp: Path) -> None:
    """Apply kopf's peering CRDs as the chart ships them (``peering.enabled=true``) and wait
    until they are Established."""
    crds = [
        c
        for c in of_kind(render(None, "peering.enabled=true"), "CustomResourceDefinition")
        if c["spec"]["group"] == "kopf.dev"
    ]
    manifest = tmp / "peering-crds.yaml"
    manifest.write_text(yaml.safe_dump_all(crds))
    subprocess.run([*kubectl, "apply", "-f", str(manifest)], check=True, capture_output=True)
    subprocess.run(
        [*kubectl, "wait", "--for=condition=Established", "--timeout=60s",
         *(f"crd/{c['metadata']['name']}" for c in crds)],
        check=True, capture_output=True,
    )  # fmt: skip


def peers_of(kubectl: list[str], name: str) -> dict[str, Any]:
    """The replicas recorded in the ClusterKopfPeering's status (identity -> priority...), {}
    while it does not exist."""
    out = subprocess.run(
        [*kubectl, "get", "clusterkopfpeering", name, "-o", "json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return dict(json.loads(out.stdout).get("status") or {}) if out.returncode == 0 else {}
