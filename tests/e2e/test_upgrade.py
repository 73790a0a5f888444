"""The chart's life cycle on a real control plane: install, place a job, `helm upgrade` (the CRD is
upgraded with the chart), then uninstall with the operator gone: nothing stays stuck.

The operator runs as a local process with a token of the chart's ServiceAccount (kwok fakes the
Deployment's pod). kwok cannot run the uninstall hook's container either, so after
`helm uninstall --no-hooks` the test runs the hook's command, `fabricfit release --all`, with a
token of the hook's own ServiceAccount and RBAC (rendered from the chart, applied alone).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml

from fabricfit_dev.chart import CHART, helm, is_hook, kube_version
from fabricfit_dev.cluster.processes import free_port
from fabricfit_dev.e2e.accounts import sa_kubeconfig
from fabricfit_dev.e2e.objects import (
    POOL_LABEL,
    TT,
    make_pool,
    planned,
    submit_job,
    wait_bound,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

CRD = "trainingtopologies.fabricfit.dev"
GATE = "fabricfit.dev/placement"
MARK = "Upgraded by the test chart."


def changed_chart(tmp: Path) -> Path:
    """A copy of the chart one version later whose CRD carries a new description."""
    chart = tmp / "fabricfit"
    shutil.copytree(CHART, chart)
    (crd_file,) = (chart / "files" / "crds").glob("*.yaml")
    text = crd_file.read_text()
    old = "description: TrainingTopology names"
    crd_file.write_text(text.replace(old, old.replace(": ", f": {MARK} "), 1))
    meta = chart / "Chart.yaml"
    meta.write_text(meta.read_text().replace("version: 0.1.0", "version: 0.1.1", 1))
    return chart


def gated_pod(name: str, pool: str, owner: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"fabricfit.dev/topology": owner}},
        "spec": {
            "schedulingGates": [{"name": GATE}],
            "nodeSelector": {POOL_LABEL: pool},
            "containers": [{"name": "c", "image": "example.invalid/train:1",
                            "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        },
    }  # fmt: skip


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=False)


def crd_description(kubectl: list[str]) -> str:
    out = run([*kubectl, "get", "crd", CRD, "-o", "yaml"])
    assert out.returncode == 0, out.stderr
    crd = yaml.safe_load(out.stdout)
    return str(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"])


def release_with_hook_identity(
    kubeconfig: Path, kubectl: list[str], core: Any, name: str, ns: str, tmp: Path
) -> subprocess.CompletedProcess[str]:
    """`fabricfit release --all` as the uninstall hook runs it: the hook's own account."""
    rendered = run([helm(), "template", name, str(CHART), "--namespace", ns,
                    "--kube-version", kube_version(), "--show-only",
                    "templates/cleanup-hook.yaml"])  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    objects = [o for o in yaml.safe_load_all(rendered.stdout) if o and o["kind"] != "Job"]
    assert objects and all(is_hook(o) for o in objects)
    manifest = tmp / "hook-rbac.yaml"
    manifest.write_text(yaml.safe_dump_all(objects))
    core.create_namespace({"metadata": {"name": ns}})
    applied = run([*kubectl, "apply", "-f", str(manifest)])
    assert applied.returncode == 0, applied.stderr
    account = next(o for o in objects if o["kind"] == "ServiceAccount")["metadata"]["name"]
    credentials = sa_kubeconfig(kubeconfig, core, ns, account, tmp / "hook.yaml")
    try:
        return run([sys.executable, "-m", "fabricfit", "release", "--all",
                    "--kubeconfig", str(credentials)])  # fmt: skip
    finally:
        run([*kubectl, "delete", "-f", str(manifest), "--wait=false"])
        core.delete_namespace(ns)


def test_install_place_upgrade_uninstall_leaves_nothing_stuck(
    kubeconfig: Path,
    kubectl: list[str],
    operator: OperatorProcess,
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
    tmp_path: Path,
) -> None:
    name = f"up-{uuid.uuid4().hex[:5]}"
    release_ns = f"fabricfit-{name}"
    base = [helm(), "--kubeconfig", str(kubeconfig), "--namespace", release_ns]
    installed = run([*base, "install", name, str(CHART), "--create-namespace", "--take-ownership",
                     "--set", "operator.resyncSeconds=2", "--wait=false"])  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    operator.stop()  # only the chart's identity acts from here on
    try:
        account = f"{name}-fabricfit"
        credentials = sa_kubeconfig(kubeconfig, core, release_ns, account, tmp_path / "sa.yaml")
        chart_operator = OperatorProcess(credentials, tmp_path, "--metrics-port", str(free_port()))
        try:
            chart_operator.start()
            make_pool(core, "upg", rail_groups_per_spine=1, nodes_per_rail_group=4)
            submit_job(batch, custom, namespace, "placed", pods=2, pool="upg",
                       parallelism={"tensor": 8, "data": 2})  # fmt: skip
            tt = wait_condition(custom, namespace, "placed", "Placed", "True", timeout=120)
            bound = {
                i: p.spec.node_name for i, p in wait_bound(core, namespace, "placed", 2).items()
            }
            assert bound == dict(enumerate(planned(tt)))

            upgraded = run([*base, "upgrade", name, str(changed_chart(tmp_path)), "--reuse-values"])
            assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
            assert crd_description(kubectl).startswith(MARK)  # helm upgraded the CRD
            after = wait_condition(custom, namespace, "placed", "Placed", "True", timeout=30)
            assert planned(after) == planned(tt)
        finally:
            chart_operator.stop()  # what uninstall does to the Deployment

        # With the operator gone: a job's pods created gated stay gated.
        for i in range(2):
            core.create_namespaced_pod(namespace, gated_pod(f"gated-{i}", "upg", "late"))
        uninstalled = run([*base, "uninstall", name, "--wait", "--no-hooks"])
        assert uninstalled.returncode == 0, uninstalled.stderr
        assert run([*kubectl, "get", "crd", CRD]).returncode == 0  # kept, and the TTs with it
        assert run([*kubectl, "get", "clusterrole", account]).returncode != 0

        released = release_with_hook_identity(
            kubeconfig, kubectl, core, name, f"{release_ns}-hook", tmp_path
        )
        assert released.returncode == 0, released.stdout + released.stderr
        assert f"released TrainingTopology {namespace}/placed" in released.stdout
        for i in range(2):
            assert f"released Pod {namespace}/gated-{i}: scheduling gate removed" in released.stdout

        gone = run([*kubectl, "delete", "tt", "--all", "-n", namespace, "--timeout=30s"])
        assert gone.returncode == 0, gone.stderr  # no finalizer holds it
        assert not custom.list_namespaced_custom_object(*TT[:2], namespace, TT[2])["items"]
        wait_for(
            lambda: all(
                core.read_namespaced_pod(f"gated-{i}", namespace).spec.node_name for i in range(2)
            ),
            timeout_seconds=60,
            what="the released pods to be scheduled",
        )
        leftover = [p.metadata.name for p in core.list_namespaced_pod(namespace).items
                    if any(g.name == GATE for g in p.spec.scheduling_gates or [])]  # fmt: skip
        assert leftover == []
    finally:
        run([*base, "uninstall", name, "--no-hooks"])
        run([*kubectl, "delete", "namespace", release_ns, "--wait=false"])
        run([*kubectl, "apply", "-f", str(CHART.parents[1] / "crds")])  # the CRD as committed
        operator.start()
