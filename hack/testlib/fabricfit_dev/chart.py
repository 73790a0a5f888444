"""Rendering the Helm chart with the real helm binary (``hack/cluster build`` caches it), for the
chart's unit tests and the e2e tests that install it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

from fabricfit_dev import paths
from fabricfit_dev.cluster import binaries

CHART = paths.REPO / "charts" / "fabricfit"
CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))
METRIC_TOKEN = re.compile(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b")


def helm() -> str:
    path = binaries.locate().helm
    assert path.exists(), f"helm is not built ({path}); run: hack/cluster build"
    return str(path)


def kube_version() -> str:
    """The pinned Kubernetes version (hack/versions.env): what `helm template` and `helm lint`
    check the chart's kubeVersion against (a helm built without release ldflags says 1.20)."""
    for line in (paths.HACK / "versions.env").read_text().splitlines():
        if line.startswith("KUBERNETES_VERSION="):
            return line.split("=", 1)[1].strip()
    raise AssertionError("KUBERNETES_VERSION missing from hack/versions.env")


def run_helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if args and args[0] in {"template", "lint"} and "--kube-version" not in args:
        args = (*args, "--kube-version", kube_version())
    return subprocess.run([helm(), *args], capture_output=True, text=True, check=check)


def render(
    values: Path | None = None,
    *sets: str,
    release: str = "ff",
    namespace: str = "ops",
    hooks: bool = False,
) -> list[dict[str, Any]]:
    """The chart's objects for ``values`` (a file) and ``--set`` expressions; Helm hooks only
    when ``hooks``."""
    args = ["template", release, str(CHART), "--namespace", namespace]
    if values is not None:
        args += ["-f", str(values)]
    for expr in sets:
        args += ["--set", expr]
    out = run_helm(*args).stdout
    return [d for d in yaml.safe_load_all(out) if d and (hooks or not is_hook(d))]


def is_hook(obj: dict[str, Any]) -> bool:
    """A Helm hook (the uninstall cleanup): not part of the installed release."""
    return "helm.sh/hook" in ((obj.get("metadata") or {}).get("annotations") or {})


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = of_kind(objects, kind)
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def rule_groups(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The PrometheusRule's groups, as a Prometheus rules file holds them."""
    return list(one(objects, "PrometheusRule")["spec"]["groups"])


def dashboard(objects: list[dict[str, Any]]) -> dict[str, Any]:
    import json

    config_map = one(objects, "ConfigMap")
    return dict(json.loads(config_map["data"]["fabricfit.json"]))
