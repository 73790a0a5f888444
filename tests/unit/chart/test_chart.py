"""The Helm chart, rendered by the real helm: lint, strict Kubernetes schemas, security, RBAC,
toggles, the operator flags it passes, and that crds/ and deploy/ stay in sync with it."""

from __future__ import annotations

import filecmp
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from fabricfit.cli.common import Parser
from fabricfit.cli.run import configure
from fabricfit.workloads import KINDS
from fabricfit_dev.chart import CHART, CI_VALUES, helm, of_kind, one, render, run_helm
from fabricfit_dev.paths import REPO

KUBERNETES_VERSION = "1.36"
MONITORING_KINDS = {"ServiceMonitor", "PrometheusRule"}  # prometheus-operator CRDs: no schema
VALUE_FILES = [None, *CI_VALUES]
#: Cluster-scoped Kueue objects of the AdmissionCheck controller: the ClusterRole in every mode.
KUEUE_CLUSTER_RULES: dict[tuple[str, str], set[str]] = {
    ("kueue.x-k8s.io", "admissionchecks"): {"list", "watch"},
    ("kueue.x-k8s.io", "admissionchecks/status"): {"patch"},
    ("kueue.x-k8s.io", "resourceflavors"): {"list", "watch"},
}
EXPECTED_RULES: dict[tuple[str, str], set[str]] = {
    ("", "nodes"): {"list", "watch"},
    ("fabricfit.dev", "trainingtopologies"): {"get", "list", "watch", "patch"},
    ("fabricfit.dev", "trainingtopologies/status"): {"patch"},
    ("", "pods"): {"get", "list", "watch", "patch", "delete"},
    ("batch", "jobs"): {"get", "patch"},
    ("jobset.x-k8s.io", "jobsets"): {"get", "patch"},
    ("kubeflow.org", "pytorchjobs"): {"get", "patch"},
    ("leaderworkerset.x-k8s.io", "leaderworkersets"): {"get", "patch"},
    ("trainer.kubeflow.org", "trainjobs"): {"get", "patch"},
    ("apps", "deployments"): {"get", "patch"},
    ("apps", "statefulsets"): {"get", "patch"},
    # reconcile.computedomain: read, create (and replace), delete on release
    ("resource.nvidia.com", "computedomains"): {"get", "create", "delete"},
    ("resource.k8s.io", "resourceclaimtemplates"): {"get"},
    ("", "events"): {"create"},
    ("kueue.x-k8s.io", "workloads"): {"list", "watch"},
    ("kueue.x-k8s.io", "workloads/status"): {"patch"},
    **KUEUE_CLUSTER_RULES,
}
# Cluster-wide in either mode: DRA's ResourceSlices and every namespace's ResourceClaims, the
# claims fabricfit allocates itself (their status and the synthetic binding subresource, checked
# at cluster scope) and the DeviceClasses they name.
DRA_RULES: dict[tuple[str, str], set[str]] = {
    ("resource.k8s.io", "resourceslices"): {"list", "watch"},
    ("resource.k8s.io", "resourceclaims"): {"get", "list", "watch", "update"},
    ("resource.k8s.io", "resourceclaims/status"): {"update"},
    ("resource.k8s.io", "resourceclaims/binding"): {"update"},
    ("resource.k8s.io", "deviceclasses"): {"get"},
}


#: Labels that make Kubernetes' aggregation controller copy a ClusterRole's rules into the
#: built-in user-facing roles.
AGGREGATE_LABELS = {
    f"rbac.authorization.k8s.io/aggregate-to-{role}" for role in ("admin", "edit", "view")
}
TT_RESOURCE = ("fabricfit.dev", "trainingtopologies")

# kopf lists, watches and patches the peering object; the operator gets and creates it.
PEERING_VERBS = {"get", "list", "watch", "patch", "create"}


def values_id(path: Path | None) -> str:
    return "default" if path is None else path.name


def rules_of(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    found: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                found.setdefault((group, resource), set()).update(rule["verbs"])
    return found


def operator_role(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The operator's own ClusterRole (not the rules it aggregates into the user roles)."""
    (role,) = [o for o in of_kind(objects, "ClusterRole") if not o["metadata"].get("labels", {})
               .keys() & AGGREGATE_LABELS]  # fmt: skip
    return role


def container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (only,) = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return dict(only)


def operator_args(objects: list[dict[str, Any]]) -> Any:
    parser = Parser(prog="fabricfit run")
    configure(parser)
    return parser.parse_args(container(objects)["args"])


@pytest.mark.parametrize("values", VALUE_FILES, ids=values_id)
def test_helm_lint_strict(values: Path | None) -> None:
    args = ["lint", "--strict", str(CHART)] + (["-f", str(values)] if values else [])
    result = run_helm(*args, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("values", VALUE_FILES, ids=values_id)
def test_rendered_objects_pass_strict_kubernetes_schemas(values: Path | None) -> None:
    objects = render(values, hooks=True)
    assert objects
    for obj in objects:
        if obj["kind"] in MONITORING_KINDS:
            assert obj["apiVersion"] == "monitoring.coreos.com/v1"
            continue
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{obj['kind']} {obj['metadata']['name']}: {err.message}")


def test_strict_validation_can_fail() -> None:
    (service,) = of_kind(render(), "Service")
    service["spec"]["prot"] = [1]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("values", VALUE_FILES, ids=values_id)
def test_pod_meets_restricted_pod_security(values: Path | None) -> None:
    objects = render(values)
    deployment = one(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    main = container(objects)
    security = main["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not security.get("privileged")
    assert main["resources"]["requests"]["cpu"] and main["resources"]["limits"]["memory"]
    if operator_args(objects).peering is None:
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    assert "readinessProbe" not in main
    probe = main["livenessProbe"]["httpGet"]
    assert probe == {"path": "/healthz", "port": "healthz"}
    ports = {p["name"]: p["containerPort"] for p in main["ports"]}
    args = operator_args(objects)
    assert args.liveness == f"http://0.0.0.0:{ports['healthz']}/healthz"
    assert args.metrics_port == ports["metrics"]


def test_cluster_wide_rbac_is_exactly_what_the_operator_uses() -> None:
    objects = render()
    assert of_kind(objects, "Role") == [] and of_kind(objects, "RoleBinding") == []
    role = operator_role(objects)
    assert rules_of(role) == {**EXPECTED_RULES, **DRA_RULES}
    binding = one(objects, "ClusterRoleBinding")
    account = one(objects, "ServiceAccount")
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": "ops"}
    ]
    deployment = one(objects, "Deployment")
    assert (
        deployment["spec"]["template"]["spec"]["serviceAccountName"]
        == (account["metadata"]["name"])
    )
    args = operator_args(objects)
    assert args.all_namespaces and args.namespace == [] and args.standalone


def test_every_workload_kind_the_operator_patches_is_granted() -> None:
    granted = rules_of(operator_role(render()))
    for kind in KINDS.values():
        assert set(kind.rbac_verbs) <= granted[(kind.api_group, kind.plural)], kind.name


@pytest.mark.parametrize("values", VALUE_FILES, ids=values_id)
def test_no_wildcards_and_no_secrets(values: Path | None) -> None:
    for role in of_kind(render(values), "ClusterRole") + of_kind(render(values), "Role"):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs"):
                assert "*" not in rule[field], rule
            assert not {"secrets", "configmaps"} & set(rule["resources"]), rule
            assert "nonResourceURLs" not in rule and "resourceNames" not in rule


def test_rbac_rules_say_why() -> None:
    """Every rule of the operator's roles is preceded by a comment saying why (the RBAC
    reference page quotes them)."""
    from fabricfit_dev.docsgen.chart import rbac_roles

    for values in (None, CHART / "ci" / "namespaced-values.yaml"):
        roles = rbac_roles(values)
        assert roles
        for role in roles:
            assert role.rules and all(why for _rule, why in role.rules), role.name


@pytest.mark.parametrize("values", [None, CHART / "ci" / "namespaced-values.yaml"])
def test_users_of_the_builtin_roles_get_training_topologies(values: Path | None) -> None:
    roles = {
        role["metadata"]["name"]: role
        for role in of_kind(render(values), "ClusterRole")
        if role["metadata"]["labels"].keys() & AGGREGATE_LABELS
    }
    edit, view = roles["ff-fabricfit-edit"], roles["ff-fabricfit-view"]
    assert edit["metadata"]["labels"].keys() & AGGREGATE_LABELS == {
        "rbac.authorization.k8s.io/aggregate-to-admin",
        "rbac.authorization.k8s.io/aggregate-to-edit",
    }
    assert view["metadata"]["labels"].keys() & AGGREGATE_LABELS == {
        "rbac.authorization.k8s.io/aggregate-to-view"
    }
    assert rules_of(edit) == {
        TT_RESOURCE: {"get", "list", "watch", "create", "update", "patch", "delete",
                      "deletecollection"},
    }  # fmt: skip
    # Readers see the plan in status; only the operator writes it.
    assert rules_of(view) == {
        TT_RESOURCE: {"get", "list", "watch"},
        ("fabricfit.dev", "trainingtopologies/status"): {"get", "list", "watch"},
    }
    assert len(roles) == 2


@pytest.mark.parametrize("sets", ["rbac.aggregateToUserRoles=false", "rbac.create=false"])
def test_user_roles_can_be_left_out(sets: str) -> None:
    labelled = [
        role
        for role in of_kind(render(None, sets), "ClusterRole")
        if role["metadata"]["labels"].keys() & AGGREGATE_LABELS
    ]
    assert labelled == []


def test_namespaced_mode_grants_per_namespace_and_nodes_cluster_wide() -> None:
    objects = render(CHART / "ci" / "namespaced-values.yaml")
    cluster_role = operator_role(objects)
    # Every GPU counts: pods of all namespaces, read-only; changes only through the Roles.
    assert rules_of(cluster_role) == {
        ("", "nodes"): {"list", "watch"},
        ("", "pods"): {"list", "watch"},
        **KUEUE_CLUSTER_RULES,
        **DRA_RULES,
    }
    roles = of_kind(objects, "Role")
    assert sorted(r["metadata"]["namespace"] for r in roles) == ["team-a", "team-b"]
    cluster_only = {("", "nodes"), *KUEUE_CLUSTER_RULES}
    namespaced = {k: v for k, v in EXPECTED_RULES.items() if k not in cluster_only}
    for role in roles:
        assert rules_of(role) == {
            **namespaced,
            ("kopf.dev", "kopfpeerings"): PEERING_VERBS,
        }
    bindings = of_kind(objects, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-a", "team-b"]
    assert all(b["subjects"][0]["namespace"] == "ops" for b in bindings)
    args = operator_args(objects)
    assert args.namespace == ["team-a", "team-b"] and not args.all_namespaces
    assert (args.peering, args.priority) == ("fabricfit", "10")
    assert (args.fabric, args.label_scheme, args.resync_seconds) == ("gb200-nvl72", "topograph", 30)
    assert args.verbose
    assert one(objects, "Deployment")["spec"]["replicas"] == 2


def test_cluster_wide_peering_grants_cluster_peerings() -> None:
    role = operator_role(render(None, "peering.enabled=true"))
    assert rules_of(role)[("kopf.dev", "clusterkopfpeerings")] == PEERING_VERBS


def test_monitoring_objects_are_off_by_default_and_on_when_asked() -> None:
    default = render()
    assert not of_kind(default, "ServiceMonitor") and not of_kind(default, "PrometheusRule")
    dashboard = one(default, "ConfigMap")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"

    objects = render(CHART / "ci" / "monitoring-values.yaml")
    monitor = one(objects, "ServiceMonitor")
    service = one(objects, "Service")
    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["ops"]}
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert selector.items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert monitor["spec"]["endpoints"][0]["interval"] == "15s"
    assert service["spec"]["ports"][0]["port"] == 9100
    assert operator_args(objects).metrics_port == 9100
    rule = one(objects, "PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    exprs = [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]
    assert "fabricfit_placement_efficiency_ratio < 0.9" in exprs
    assert one(objects, "ConfigMap")["metadata"]["annotations"] == {"grafana_folder": "fabricfit"}


def test_service_selects_the_operator_pod() -> None:
    objects = render()
    selector = one(objects, "Service")["spec"]["selector"]
    pod_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()


def test_bring_your_own_account_renders_no_rbac() -> None:
    objects = render(CHART / "ci" / "minimal-values.yaml")
    kinds = {o["kind"] for o in objects}
    assert kinds == {"Deployment", "Service", "CustomResourceDefinition"}
    pod = one(objects, "Deployment")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "fabricfit-operator"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert container(objects)["image"] == "registry.example.com/ml/fabricfit:0.1.0-custom"


def test_default_image_tag_is_the_app_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert container(render())["image"] == f"fabricfit:{chart['appVersion']}"


@pytest.mark.parametrize(
    ("sets", "error"),
    [
        (("operator.fabric=DGX_Z9",), "/operator/fabric"),
        (("operator.labelScheme=whatever",), "/operator/labelScheme"),
        (("operator.resyncSeconds=0",), "/operator/resyncSeconds"),
        (("metrics.port=70000",), "/metrics/port"),
        (("unknownKey=1",), "unknownKey"),
        (("replicas=2",), "peering.enabled"),
    ],
)
def test_bad_values_are_rejected(sets: tuple[str, ...], error: str) -> None:
    args = ["template", "ff", str(CHART)]
    for expr in sets:
        args += ["--set", expr]
    result = run_helm(*args, check=False)
    assert result.returncode != 0
    assert error in result.stderr


def test_every_top_level_value_is_documented() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith(("#", " ", "-")) and ":" in line:
            key = line.split(":")[0]
            start = i
            while start > 0 and lines[start - 1].startswith("#"):
                start -= 1
            assert start < i and lines[start].startswith(f"# {key} "), f"{key} lacks a comment"


def test_chart_crds_are_the_top_level_crds() -> None:
    top, chart = REPO / "crds", CHART / "files" / "crds"
    names = sorted(p.name for p in top.glob("*.yaml"))
    assert names == sorted(p.name for p in chart.glob("*.yaml"))
    mismatch = filecmp.cmpfiles(top, chart, names, shallow=False)[1:]
    assert mismatch == ([], []), f"charts/fabricfit/files/crds differs from crds/: {mismatch}"


def test_deploy_manifests_do_not_drift_from_the_chart() -> None:
    result = subprocess.run(
        [str(REPO / "hack" / "render-deploy.sh"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    docs = [d for d in yaml.safe_load_all((REPO / "deploy" / "fabricfit.yaml").read_text()) if d]
    assert docs[0]["kind"] == "Namespace"
    assert docs[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert {d["metadata"].get("namespace") for d in docs[1:] if d["kind"] != "ClusterRole"} <= {
        "fabricfit",
        None,
    }


def test_helm_installs_and_upgrades_the_generated_crd_and_keeps_it_on_uninstall() -> None:
    generated = yaml.safe_load(
        (REPO / "crds" / "trainingtopologies.fabricfit.dev.yaml").read_text()
    )
    crd = one(render(), "CustomResourceDefinition")
    assert crd["spec"] == generated["spec"]
    assert crd["metadata"]["name"] == generated["metadata"]["name"]
    assert crd["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
    assert crd["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert not (CHART / "crds").exists(), "Helm never upgrades crds/: the CRD is a template"
    assert not of_kind(render(None, "crds.install=false"), "CustomResourceDefinition")
    unkept = one(render(None, "crds.keep=false"), "CustomResourceDefinition")
    assert "annotations" not in unkept["metadata"]


def test_chart_states_the_kubernetes_versions_it_needs() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["kubeVersion"] == ">=1.30.0-0"
    old = run_helm("template", "ff", str(CHART), "--kube-version", "v1.29.4", check=False)
    assert old.returncode != 0 and "kubeVersion" in old.stderr


def test_helm_template_and_lint_work_with_default_flags() -> None:
    """`helm template charts/fabricfit` as a user types it. With no cluster to ask, helm assumes
    the Kubernetes version of the client-go it was built with (release builds set it by
    ldflags, and so does hack/lib/build.sh); a helm without them says 1.20, which the chart's
    kubeVersion refuses."""
    rendered = subprocess.run(
        [helm(), "template", str(CHART)], capture_output=True, text=True, check=False
    )
    assert rendered.returncode == 0, rendered.stderr
    assert one([d for d in yaml.safe_load_all(rendered.stdout) if d], "Deployment")
    linted = subprocess.run(
        [helm(), "lint", str(CHART)], capture_output=True, text=True, check=False
    )
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_uninstall_hook_releases_everything_with_only_what_it_needs() -> None:
    hooks = [o for o in render(hooks=True) if o["metadata"].get("annotations", {}).get(
        "helm.sh/hook")]  # fmt: skip
    assert {o["kind"] for o in hooks} == {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job"
    }  # fmt: skip
    for obj in hooks:
        annotations = obj["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "post-delete"
        assert "hook-succeeded" in annotations["helm.sh/hook-delete-policy"]
    job = one(hooks, "Job")
    weights = {o["kind"]: int(o["metadata"]["annotations"]["helm.sh/hook-weight"]) for o in hooks}
    assert all(w < weights["Job"] for k, w in weights.items() if k != "Job")  # RBAC first
    (release,) = job["spec"]["template"]["spec"]["containers"]
    assert release["command"] + release["args"] == ["fabricfit", "release", "--all"]
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == one(
        hooks, "ServiceAccount")["metadata"]["name"]  # fmt: skip
    rules = {(r["apiGroups"][0], r["resources"][0]): r["verbs"] for r in one(
        hooks, "ClusterRole")["rules"]}  # fmt: skip
    assert rules == {("fabricfit.dev", "trainingtopologies"): ["list", "patch"],
                     ("", "pods"): ["list", "patch"]}  # fmt: skip
    assert not [o for o in render(None, "cleanup.enabled=false", hooks=True) if o["kind"] == "Job"]


def test_peering_runs_two_replicas_that_never_act_together() -> None:
    objects = render(None, "peering.enabled=true")
    deployment = one(objects, "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
    }
    args = operator_args(objects)
    assert (args.peering, args.priority, args.standalone) == ("fabricfit", "oldest", False)
    budget = one(objects, "PodDisruptionBudget")
    assert budget["spec"]["minAvailable"] == 1
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    spread = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    term = spread["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    crds = {c["spec"]["names"]["kind"]: c for c in of_kind(objects, "CustomResourceDefinition")}
    assert crds["ClusterKopfPeering"]["spec"]["scope"] == "Cluster"
    assert crds["KopfPeering"]["spec"]["scope"] == "Namespaced"
    for crd in (crds["ClusterKopfPeering"], crds["KopfPeering"]):
        status = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
        assert status["x-kubernetes-preserve-unknown-fields"] is True
    without = render(None, "peering.enabled=true", "peering.installCRDs=false")
    assert len(of_kind(without, "CustomResourceDefinition")) == 1  # only TrainingTopology


def test_standalone_has_one_replica_and_no_budget() -> None:
    objects = render()
    assert one(objects, "Deployment")["spec"]["replicas"] == 1
    assert not of_kind(objects, "PodDisruptionBudget")
    assert "affinity" not in one(objects, "Deployment")["spec"]["template"]["spec"]
    assert operator_args(objects).standalone


def test_fabric_profiles_become_a_mounted_configmap(tmp_path: Path) -> None:
    from fabricfit.fabric.profiles import get_profile
    from fabricfit.fabric.profiles.catalog import build_catalog, dump_profile

    profile = yaml.safe_load(dump_profile(get_profile("dgx-h100")))
    profile.pop("name")
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"fabricProfiles": {"site-h100": profile}}), "utf-8")
    objects = render(values)
    config = next(
        o for o in of_kind(objects, "ConfigMap") if o["metadata"]["name"].endswith("-fabrics")
    )
    catalog = build_catalog(sorted(config["data"].items()))
    assert catalog.get("site-h100").nic_gbit_per_s == profile["nic_gbit_per_s"]
    pod = one(objects, "Deployment")["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert "--fabric-dir=/etc/fabricfit/fabrics" in container["args"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "fabrics")
    assert mount["mountPath"] == "/etc/fabricfit/fabrics"
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "fabrics")
    assert volume["configMap"]["name"] == config["metadata"]["name"]
    assert "fabricfit.dev/fabric-profiles" in pod["metadata"]["annotations"]
    assert not [
        o for o in of_kind(render(), "ConfigMap") if o["metadata"]["name"].endswith("-fabrics")
    ]
