"""The chart's aggregated ClusterRoles on a real control plane: Kubernetes' aggregation
controller copies them into the built-in roles, so a user bound only to `edit` may create a
TrainingTopology and one bound only to `view` may read it but not create one."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import yaml

from fabricfit_dev.chart import CHART, helm, kube_version
from fabricfit_dev.waiting import wait_for

AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def user_roles(release: str) -> list[dict[str, Any]]:
    out = subprocess.run(
        [helm(), "template", release, str(CHART), "--kube-version", kube_version(),
         "--show-only", "templates/user-clusterroles.yaml"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    roles = [d for d in yaml.safe_load_all(out) if d]
    assert {r["kind"] for r in roles} == {"ClusterRole"} and len(roles) == 2
    return roles


def can_i(
    kubectl: list[str], user: str, verb: str, resource: str, namespace: str, sub: str = ""
) -> bool:
    argv = [*kubectl, "auth", "can-i", verb, resource, "--as", user, "-n", namespace]
    argv += [f"--subresource={sub}"] if sub else []
    return subprocess.run(argv, capture_output=True, text=True, check=False).returncode == 0


def bind(kubectl: list[str], namespace: str, role: str, user: str) -> None:
    subprocess.run(
        [*kubectl, "create", "rolebinding", f"{user}-{role}", f"--clusterrole={role}",
         f"--user={user}", "-n", namespace],
        check=True, capture_output=True,
    )  # fmt: skip


def test_edit_users_create_and_view_users_read_training_topologies(
    kubectl: list[str], namespace: str, tmp_path: Path, operator: Any
) -> None:
    release = f"roles{uuid.uuid4().hex[:5]}"
    manifest = tmp_path / "roles.yaml"
    manifest.write_text(yaml.safe_dump_all(user_roles(release)), encoding="utf-8")
    resource = "trainingtopologies.fabricfit.dev"
    editor, viewer = f"alice-{release}", f"bob-{release}"
    assert not can_i(kubectl, editor, "create", resource, namespace)
    subprocess.run([*kubectl, "apply", "-f", str(manifest)], check=True, capture_output=True)
    try:
        bind(kubectl, namespace, "edit", editor)
        bind(kubectl, namespace, "view", viewer)
        wait_for(lambda: can_i(kubectl, editor, "create", resource, namespace), 60,
                 what="the edit role to aggregate fabricfit's rules")  # fmt: skip
        wait_for(lambda: can_i(kubectl, viewer, "list", resource, namespace), 60,
                 what="the view role to aggregate fabricfit's rules")  # fmt: skip
        for verb in ("get", "list", "watch", "update", "patch", "delete"):
            assert can_i(kubectl, editor, verb, resource, namespace), verb
        assert can_i(kubectl, viewer, "get", resource, namespace, sub="status")
        assert not can_i(kubectl, viewer, "create", resource, namespace)
        assert not can_i(kubectl, editor, "patch", resource, namespace, sub="status")

        topology = {
            "apiVersion": "fabricfit.dev/v1alpha1",
            "kind": "TrainingTopology",
            "metadata": {"name": "by-alice", "namespace": namespace},
            "spec": {"workloadRef": {"apiVersion": "batch/v1", "kind": "Job", "name": "x"},
                     "parallelism": {"tensor": 8}, "placement": {"mode": "advisory"}},
        }  # fmt: skip
        path = tmp_path / "tt.yaml"
        path.write_text(yaml.safe_dump(topology), encoding="utf-8")
        created = subprocess.run([*kubectl, "create", "-f", str(path), "--as", editor],
                                 capture_output=True, text=True, check=False)  # fmt: skip
        assert created.returncode == 0, created.stderr
        read = subprocess.run(
            [*kubectl, "get", "tt", "by-alice", "-n", namespace, "--as", viewer, "-o", "name"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert read.returncode == 0 and read.stdout.strip().endswith("by-alice"), read.stderr
        refused = subprocess.run(
            [*kubectl, "delete", "tt", "by-alice", "-n", namespace, "--as", viewer],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert refused.returncode != 0 and "forbidden" in refused.stderr.lower()
    finally:
        subprocess.run([*kubectl, "delete", "-f", str(manifest), "--wait=false"],
                       capture_output=True, check=False)  # fmt: skip
