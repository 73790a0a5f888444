"""Least privilege, proven from the API server's audit log.

The chart's RBAC (rendered by helm) is bound to a ServiceAccount; the operator runs with that
account's token through a scenario that exercises every request path it has (pinned placement,
an invalid spec and its Event, a cordon and Degraded, a pinned pod left Unschedulable by another
team's pod (read again and deleted), deletion that ungates pods, plain-Pod
workloads, GPUs claimed through DRA, a ComputeDomain for a job over GB200 trays, and placement
through fabricfit's Kueue AdmissionCheck with the real Kueue). The audit log
(``<state dir>/logs/audit.log``, written by the private control plane) then says which
(API group, resource, verb) the account really used:

- none of its requests was forbidden (the chart grants enough);
- every grant of the chart was used, except the few listed below with the reason no test here
  can use them (the chart grants nothing more).
"""

from __future__ import annotations

import base64
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit_dev.chart import CHART, helm, is_hook, kube_version
from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.e2e import dra, kueue
from fabricfit_dev.e2e.computedomain import CD, GB200, installed_crd, tray_job
from fabricfit_dev.e2e.held import bound, held_job, pinned, tenant
from fabricfit_dev.e2e.objects import (
    TT,
    indexed_job,
    job_pods,
    make_pool,
    planned,
    read_topology,
    topology,
    wait_condition,
)
from fabricfit_dev.e2e.reliability import (
    MeteredOperator,
    audit_events,
    audit_offset,
    state_directory,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

Grant = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)
# Grants no scenario here can use, and why.
UNEXERCISED: dict[Grant, str] = {
    **{
        (group, plural, verb): "the workload kind's CRD is not installed on the test cluster"
        for group, plural in (
            ("jobset.x-k8s.io", "jobsets"),
            ("kubeflow.org", "pytorchjobs"),
            ("leaderworkerset.x-k8s.io", "leaderworkersets"),
            ("trainer.kubeflow.org", "trainjobs"),
        )
        for verb in ("get", "patch")
    },
    ("resource.k8s.io", "resourceclaims/binding", "update"): (
        "a synthetic subresource: Kubernetes 1.36 checks it when a status write changes a "
        "claim's allocation or reservedFor (the resourceclaims/status update here), and no "
        "request names it"
    ),
}


def grants(objects: list[dict[str, Any]]) -> set[Grant]:
    found = set()
    for role in (o for o in objects if o["kind"] in ("ClusterRole", "Role")):
        for rule in role.get("rules") or []:
            for group in rule.get("apiGroups") or [""]:
                for resource in rule.get("resources") or []:
                    for verb in rule.get("verbs") or []:
                        found.add((group, resource, verb))
    return found


def used_by(events: list[dict[str, Any]], username: str) -> tuple[set[Grant], list[Any]]:
    used, denied = set(), []
    for e in events:
        if (e.get("user") or {}).get("username") != username:
            continue
        ref = e.get("objectRef")
        if ref is None:
            continue  # a non-resource URL (/version, discovery): open to every authenticated user
        resource = ref.get("resource", "")
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        grant = (ref.get("apiGroup", ""), resource, e["verb"])
        status = e.get("responseStatus") or {}
        if status.get("code") == 403 and "being terminated" not in status.get("message", ""):
            denied.append((grant, e.get("requestURI")))  # RBAC said no (not a dying namespace)
        else:
            used.add(grant)
    return used, denied


def token_kubeconfig(admin: Path, token: str, out: Path) -> Path:
    config = yaml.safe_load(admin.read_text())
    cluster = config["clusters"][0]["cluster"]
    ca = (
        cluster.get("certificate-authority-data")
        or base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    )
    out.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": cluster["server"],
                                               "certificate-authority-data": ca}}],
        "users": [{"name": "sa", "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "c", "user": "sa"}}],
        "current-context": "sa",
    }))  # fmt: skip
    return out


@pytest.fixture
def chart_identity(
    kubeconfig: Path, kubectl: list[str], core: Any, tmp_path: Path
) -> Iterator[tuple[Path, str, list[dict[str, Any]]]]:
    """The chart's ServiceAccount and RBAC (default values: cluster-wide), applied alone."""
    release, ns = f"priv{uuid.uuid4().hex[:5]}", f"priv-{uuid.uuid4().hex[:6]}"
    out = subprocess.run(
        [helm(), "template", release, str(CHART), "--namespace", ns,
         "--kube-version", kube_version()],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    # The operator's identity only: the ClusterRoles the chart aggregates into the built-in
    # user roles (aggregate-to-*) are for people (tests/e2e/test_user_roles.py).
    objects = [d for d in yaml.safe_load_all(out) if d and not _for_people(d)]
    kinds = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    rbac = [o for o in objects if o["kind"] in kinds and not is_hook(o)]
    core.create_namespace({"metadata": {"name": ns}})
    manifest = tmp_path / "rbac.yaml"
    manifest.write_text(yaml.safe_dump_all(rbac))
    subprocess.run([*kubectl, "apply", "-f", str(manifest)], check=True, capture_output=True)
    account = next(o for o in rbac if o["kind"] == "ServiceAccount")["metadata"]["name"]
    token = core.create_namespaced_service_account_token(
        account, ns, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    creds = token_kubeconfig(kubeconfig, token, tmp_path / "sa.kubeconfig")
    try:
        yield creds, f"system:serviceaccount:{ns}:{account}", objects
    finally:
        subprocess.run([*kubectl, "delete", "-f", str(manifest), "--wait=false"],
                       capture_output=True, check=False)  # fmt: skip
        core.delete_namespace(ns)


@pytest.mark.controllers("kueue")
def test_chart_rbac_is_exactly_what_the_operator_uses(
    kueue_operator: OperatorProcess,
    chart_identity: tuple[Path, str, list[dict[str, Any]]],
    core: Any,
    custom: Any,
    batch: Any,
    kubectl: list[str],
    namespace: str,
    tmp_path: Path,
) -> None:
    directory = state_directory()
    if directory is None:
        pytest.skip("needs the private control plane's audit log")
    credentials, username, objects = chart_identity
    offset = audit_offset(directory)
    make_pool(core, "priv", nodes_per_rail_group=4)
    make_pool(core, "privcd", **GB200)
    make_pool(core, "privapps", rail_groups_per_spine=1, nodes_per_rail_group=2)
    kueue_operator.stop()
    mine = MeteredOperator(credentials, tmp_path / "op", "--all-namespaces")
    try:
        with installed_crd(kubectl):
            mine.start()
            run_every_request_path(core, custom, batch, namespace)
            run_kueue_and_gb200_paths(custom, batch, namespace)
            run_served_kinds_paths(custom, batch, namespace)
            assert mine.alive()
    finally:
        mine.stop()
        kueue_operator.start()

    used, denied = used_by(audit_events(directory, offset), username)
    assert used, f"no audit events for {username}"
    assert not denied, f"forbidden requests: {denied}"
    granted = grants(objects)
    assert used <= granted, f"used but not granted: {sorted(used - granted)}"
    unused = granted - used - set(UNEXERCISED)
    print(f"\n[privilege] {username}: used {sorted(used)}")
    assert not unused, f"granted but never used (drop them from the chart): {sorted(unused)}"


def _for_people(obj: dict[str, Any]) -> bool:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return any(k.startswith("rbac.authorization.k8s.io/aggregate-to-") for k in labels)


def run_every_request_path(core: Any, custom: Any, batch: Any, ns: str) -> None:
    # Pinned placement of a Job: reads, gate/unsuspend patches, pins, status, Events.
    batch.create_namespaced_job(ns, indexed_job("priv", 2, "priv"))
    custom.create_namespaced_custom_object(
        *TT[:2], ns, TT[2], topology("priv", "priv", {"tensor": 8, "data": 2})
    )
    plan = planned(wait_condition(custom, ns, "priv", "Placed", "True"))
    # Degraded on a cordoned node (a Warning Event); the pod recreated there cannot be pinned
    # from the recorded plan, so its event reads the TrainingTopology and re-places it.
    core.patch_node(plan[0], {"spec": {"unschedulable": True}})
    try:
        wait_condition(custom, ns, "priv", "Degraded", "True")
        old = job_pods(core, ns, "priv")[0]
        core.delete_namespaced_pod(old.metadata.name, ns, grace_period_seconds=0)
        wait_for(
            lambda: (
                (p := job_pods(core, ns, "priv").get(0)) is not None
                and p.metadata.uid != old.metadata.uid
                and p.spec.node_name not in (None, plan[0])
            ),
            90,
            what="pod 0 re-placed off the cordoned node",
        )
    finally:
        core.patch_node(plan[0], {"spec": {"unschedulable": False}})
    # A pinned pod left Unschedulable by another team's pod on its node: read again, deleted
    # unbound, its replacement pinned elsewhere.
    batch.create_namespaced_job(ns, held_job("stuck", 1, "priv"))
    custom.create_namespaced_custom_object(
        *TT[:2], ns, TT[2], topology("stuck", "stuck", {"tensor": 8, "data": 1})
    )
    first = wait_for(lambda: pinned(core, ns, "stuck", 1), what="the held pod pinned")[0]
    core.create_namespaced_pod(
        ns, tenant("tenant", planned(read_topology(custom, ns, "stuck"))[0], 8)
    )
    moved = wait_for(lambda: bound(core, ns, "stuck", 1), 90, what="the stuck pod re-placed")[0]
    assert moved.metadata.uid != first.metadata.uid
    custom.delete_namespaced_custom_object(*TT[:2], ns, TT[2], "stuck")
    # A plain-Pod workload: pods listed by selector and labelled.
    for i in range(2):
        core.create_namespaced_pod(ns, {
            "metadata": {"name": f"pp-{i}", "labels": {"app": "pp", "rank": str(i)}},
            "spec": {"schedulingGates": [{"name": "fabricfit.dev/placement"}],
                     "nodeSelector": {"fabricfit.dev/pool": "priv"},
                     "containers": [{"name": "c", "image": "example.invalid/x:1",
                                     "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
        })  # fmt: skip
    ref = {"apiVersion": "v1", "kind": "Pod", "podSelector": {"app": "pp"}, "indexLabel": "rank"}
    custom.create_namespaced_custom_object(
        *TT[:2], ns, TT[2], topology("pp", "pp", {"tensor": 8, "data": 2}, workloadRef=ref)
    )
    wait_condition(custom, ns, "pp", "Planned", "True")
    # A Job whose pods claim GPUs through DRA: the operator reads the ResourceClaimTemplate
    # (gpusPerPod comes from it); no node of the pool publishes DRA GPUs, so it waits.
    request = {"deviceClassName": "gpu.nvidia.com", "count": 8}
    custom.create_namespaced_custom_object("resource.k8s.io", "v1", ns, "resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpus"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpus", "exactly": request}]}}},
    })  # fmt: skip
    dra_job = indexed_job("dra", 2, "priv")
    dra_spec = dra_job["spec"]["template"]["spec"]
    dra_spec["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "gpus"}]
    dra_spec["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    batch.create_namespaced_job(ns, dra_job)
    dra_tt = topology("dra", "dra", {"tensor": 8, "data": 2})
    del dra_tt["spec"]["gpusPerPod"]
    custom.create_namespaced_custom_object(*TT[:2], ns, TT[2], dra_tt)
    waiting = wait_condition(custom, ns, "dra", "Planned", "False")
    assert waiting["status"]["gpuAllocation"]["claims"] == ["ResourceClaimTemplate/gpus"]
    custom.delete_namespaced_custom_object(*TT[:2], ns, TT[2], "dra")
    place_on_devices(core, custom, batch, ns)
    # Deletion releases and ungates (TrainingTopology finalizer, pod patches).
    custom.delete_namespaced_custom_object(*TT[:2], ns, TT[2], "pp")
    custom.delete_namespaced_custom_object(*TT[:2], ns, TT[2], "priv")
    wait_for(
        lambda: not custom.list_namespaced_custom_object(*TT[:2], ns, TT[2])["items"],
        60,
        what="TrainingTopologies released",
    )


def place_on_devices(core: Any, custom: Any, batch: Any, ns: str) -> None:
    """Device-exact placement on a DRA-only pool: the pod's own claim is read, given the
    delete-protection finalizer, allocated (status) and every claim listed again, before the
    gate is lifted; the DeviceClass its template names is read."""
    from kubernetes.client.exceptions import ApiException

    fabric = fakenodes.FakeFabric(
        prefix="privdra",
        pool="privdra",
        ids="privdra",
        rail_groups_per_spine=1,
        nodes_per_rail_group=2,
    )
    names = fakenodes.create_nodes(core, dra.dra_nodes(fakenodes.node_manifests(fabric)))
    fakenodes.wait_ready(core, names)
    created: list[tuple[str, str]] = []
    try:
        for body in [dra.GPU_CLASS, *(s for n in names for s in dra.node_slices(n, nics=False))]:
            plural = "deviceclasses" if body["kind"] == "DeviceClass" else "resourceslices"
            try:
                custom.create_cluster_custom_object("resource.k8s.io", "v1", plural, body)
                created.append((plural, body["metadata"]["name"]))
            except ApiException as err:
                if err.status != 409:
                    raise
        job = indexed_job("drx", 1, "privdra")
        dra.claiming(job["spec"]["template"]["spec"], "gpus", entry="gpus")
        batch.create_namespaced_job(ns, job)
        tt = topology("drx", "drx", {"tensor": 8})
        del tt["spec"]["gpusPerPod"]
        custom.create_namespaced_custom_object(*TT[:2], ns, TT[2], tt)
        placed = wait_condition(custom, ns, "drx", "Placed", "True")
        assert placed["status"]["gpuChoice"] == "enforced"
        custom.delete_namespaced_custom_object(*TT[:2], ns, TT[2], "drx")
    finally:
        for plural, name in reversed(created):
            custom.delete_cluster_custom_object("resource.k8s.io", "v1", plural, name)


def run_kueue_and_gb200_paths(custom: Any, batch: Any, ns: str) -> None:
    # A job over GB200 trays: its ComputeDomain is created, and deleted with the topology.
    batch.create_namespaced_job(ns, tray_job("nvl", 4, "privcd", None))
    spec = topology("nvl", "nvl", {"tensor": 8, "data": 2}, gpusPerPod=4)
    custom.create_namespaced_custom_object(*TT[:2], ns, TT[2], spec)
    wait_condition(custom, ns, "nvl", "Planned", "True")
    wait_for(
        lambda: custom.list_namespaced_custom_object(*CD[:2], ns, CD[2])["items"],
        60,
        what="the ComputeDomain created",
    )
    custom.delete_namespaced_custom_object(*TT[:2], ns, TT[2], "nvl")
    wait_for(
        lambda: not custom.list_namespaced_custom_object(*CD[:2], ns, CD[2])["items"],
        60,
        what="the ComputeDomain deleted",
    )
    # Through Kueue: the AdmissionCheck is set Active, the Workload read and its check set Ready.
    with kueue.checked_queue(custom, ns, "priv", gpus=16) as queue:
        job = indexed_job("adm", 2, "priv")
        job["metadata"]["labels"] = {kueue.QUEUE_LABEL: queue}
        spec = topology(
            "adm", "adm", {"tensor": 8, "data": 2}, placement={"mode": "admission-check"}
        )
        custom.create_namespaced_custom_object(*TT[:2], ns, TT[2], spec)
        batch.create_namespaced_job(ns, job)
        wait_condition(custom, ns, "adm", "Placed", "True", timeout=120)
        custom.delete_namespaced_custom_object(*TT[:2], ns, TT[2], "adm")
        batch.delete_namespaced_job("adm", ns, propagation_policy="Background")
        wait_for(
            lambda: not custom.list_namespaced_custom_object(*TT[:2], ns, TT[2])["items"],
            60,
            what="the admission-check TrainingTopology released",
        )


def served(kind: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A one-replica served model of ``kind`` (StatefulSet or Deployment) and its topology; the
    template has the gate but not fabricfit's label, so the operator patches the workload."""
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "schedulingGates": [{"name": "fabricfit.dev/placement"}],
            "nodeSelector": {"fabricfit.dev/pool": "privapps"},
            "containers": [{"name": "serve", "image": "example.invalid/serve:1",
                            "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
        },
    }  # fmt: skip
    spec: dict[str, Any] = {"replicas": 1, "selector": {"matchLabels": {"app": name}}}
    if kind == "StatefulSet":
        spec |= {"serviceName": name, "podManagementPolicy": "Parallel"}
    workload = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
                "spec": {**spec, "template": template}}  # fmt: skip
    ref = {"apiVersion": "apps/v1", "kind": kind, "name": name}
    tt = topology(name, name, {"tensor": 8, "data": 1}, workloadRef=ref)
    tt["spec"]["serving"] = {"decodeBatch": 8, "promptTokens": 512}
    return workload, tt


def run_served_kinds_paths(custom: Any, batch: Any, ns: str) -> None:
    """Served models on the built-in apps kinds: read and patched (the chart grants both)."""
    from kubernetes import client

    apps = client.AppsV1Api(batch.api_client)
    for kind, name in (("StatefulSet", "privsts"), ("Deployment", "privdep")):
        workload, tt = served(kind, name)
        custom.create_namespaced_custom_object(*TT[:2], ns, TT[2], tt)
        if kind == "StatefulSet":
            apps.create_namespaced_stateful_set(ns, workload)
        else:
            apps.create_namespaced_deployment(ns, workload)
        wait_condition(custom, ns, name, "Placed", "True", timeout=120)
