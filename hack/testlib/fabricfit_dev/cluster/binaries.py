"""Where ``hack/cluster build`` put the binaries, by the versions pinned in hack/versions.env."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fabricfit_dev import paths
from fabricfit_dev.cluster import controllers
from fabricfit_dev.cluster.processes import ClusterError


def cache_dir() -> Path:
    return Path(os.environ.get("FABRICFIT_CACHE", str(Path.home() / ".cache" / "fabricfit")))


def pinned_versions(path: Path = paths.HACK / "versions.env") -> dict[str, str]:
    versions: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            versions[key.strip()] = value.strip()
    return versions


@dataclass(frozen=True)
class Binaries:
    kubernetes_version: str
    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    kwok: Path
    kwok_stages: Path
    helm: Path
    prometheus: Path  # test tool, built by hack/tools.sh; not part of the control plane

    def missing(self) -> list[str]:
        paths = [
            self.etcd,
            self.kube_apiserver,
            self.kube_controller_manager,
            self.kube_scheduler,
            self.kubectl,
            self.kwok,
            self.kwok_stages,
            self.helm,
        ]
        return [str(p) for p in paths if not p.exists()]


def locate() -> Binaries:
    v = pinned_versions()
    c = cache_dir()
    k8s = c / f"kubernetes-{v['KUBERNETES_VERSION']}" / "bin"
    kwok = c / f"kwok-{v['KWOK_VERSION']}"
    return Binaries(
        kubernetes_version=v["KUBERNETES_VERSION"],
        etcd=c / f"etcd-{v['ETCD_VERSION']}" / "bin" / "etcd",
        kube_apiserver=k8s / "kube-apiserver",
        kube_controller_manager=k8s / "kube-controller-manager",
        kube_scheduler=k8s / "kube-scheduler",
        kubectl=k8s / "kubectl",
        kwok=kwok / "bin" / "kwok",
        kwok_stages=kwok / "stages.yaml",
        helm=c / f"helm-{v['HELM_VERSION']}" / "bin" / "helm",
        prometheus=c / f"prometheus-{v['PROMETHEUS_VERSION']}" / "bin" / "prometheus",
    )


@dataclass(frozen=True)
class ControllerHome:
    """An optional controller built by ``hack/cluster build --with <name>``: its binary and the
    CRD and webhook manifests rendered from its module's ``config/`` at the same version."""

    name: str
    version: str
    binary: Path
    crds: Path
    webhooks: Path

    def missing(self) -> list[str]:
        return [str(p) for p in (self.binary, self.crds, self.webhooks) if not p.exists()]


def locate_controller(name: str) -> ControllerHome:
    version = pinned_versions()[controllers.VERSION_KEYS[name]]
    home = cache_dir() / f"{name}-{version}"
    return ControllerHome(
        name=name,
        version=version,
        binary=home / "bin" / name,
        crds=home / "crds.yaml",
        webhooks=home / "webhooks.yaml",
    )


def require_controllers(names: Iterable[str]) -> dict[str, ControllerHome]:
    homes = {name: locate_controller(name) for name in names}
    for name, home in homes.items():
        missing = home.missing()
        if missing:
            raise ClusterError(
                f"{name} is not built ({missing[0]} missing); run: hack/cluster build --with {name}"
            )
    return homes


def require() -> Binaries:
    binaries = locate()
    missing = binaries.missing()
    if missing:
        raise ClusterError(
            f"control-plane binaries are not built ({missing[0]} missing); run: hack/cluster build"
        )
    return binaries
