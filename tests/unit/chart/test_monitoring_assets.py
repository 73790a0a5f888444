"""The chart's Grafana dashboard and alert rules: valid, and built only on exported metrics."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit.metrics import EXPORTED_NAMES
from fabricfit_dev.chart import CHART, dashboard, one, render, rule_groups
from fabricfit_dev.paths import REPO

MONITORING = CHART / "ci" / "monitoring-values.yaml"
KEYWORDS = {"and", "or", "unless", "bool", "offset", "group_left", "group_right", "inf", "nan"}
SERIES_SUFFIXES = ("_bucket", "_sum", "_count")
GRAFANA_VARIABLES = {
    "$__rate_interval": "5m",
    "$namespace": ".*",
    "$topology": ".*",
    "$gpus_per_pod": "8",
}


def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool is missing: run hack/tools.sh (make test does)"
    return found


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression selects (labels, functions and keywords left out)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", "", text)
    text = re.sub(r"\[[^\]]*\]", "", text)
    text = re.sub(r"\b\d+(?:ms|s|m|h|d|w|y)\b", " ", text)  # durations (offset 5m)
    text = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text):
        token = match.group(0)
        if text[match.start() - 1 : match.start()] == "$" or token in KEYWORDS:
            continue
        if text[match.end() :].lstrip().startswith("("):
            continue  # a function
        names.add(token)
    return names


def exported(name: str) -> bool:
    for suffix in SERIES_SUFFIXES:
        if name.endswith(suffix) and name.removesuffix(suffix) in EXPORTED_NAMES:
            return True
    return name in EXPORTED_NAMES


def dashboard_exprs(board: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in board["panels"] for t in p.get("targets", [])]


def variable_metrics(board: dict[str, Any]) -> list[str]:
    out = []
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            match = re.match(r"label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", query)
            assert match, f"variable {variable['name']}: unexpected query {query}"
            out.append(match.group(1))
    return out


def test_metric_name_extraction() -> None:
    expr = (
        'histogram_quantile(0.9, sum by (le, handler) (rate(a_bucket{x="y{z}"}[5m]))) '
        "/ ignoring(tier) group_left b > bool 0 and on(namespace) c offset 5m"
    )
    assert metric_names(expr) == {"a_bucket", "b", "c"}
    assert not exported("up") and exported("fabricfit_reconcile_duration_seconds_bucket")


def test_dashboard_is_grafana_json_with_a_datasource_variable() -> None:
    board = dashboard(render())
    assert board == dashboard(render(MONITORING))  # the same file, whatever the values
    assert board["uid"] == "fabricfit-placement" and board["title"] and board["tags"]
    assert isinstance(board["schemaVersion"], int)
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "$datasource"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "$datasource"
    titles = " ".join(p["title"] for p in board["panels"]).lower()
    for topic in ("efficiency", "nvlink", "rail group", "spine", "free gpus", "largest placeable",
                  "shared link"):  # fmt: skip
        assert topic in titles


def test_dashboard_queries_use_only_exported_metrics() -> None:
    board = dashboard(render())
    used: set[str] = set()
    for expr in dashboard_exprs(board):
        names = metric_names(expr)
        assert names, f"no metric in {expr}"
        assert all(exported(n) for n in names), f"{expr}: {sorted(names)}"
        used |= {n.removesuffix("_bucket") for n in names}
    for name in variable_metrics(board):
        assert exported(name), name
    shown = {
        "fabricfit_placement_efficiency_ratio",
        "fabricfit_largest_placeable_pods",
        "fabricfit_link_utilisation_ratio",
        "fabricfit_neighbour_slowdown_seconds",
    }
    assert shown <= used


def test_alert_rules_use_only_exported_metrics() -> None:
    rules = [r for g in rule_groups(render(MONITORING)) for r in g["rules"]]
    assert len(rules) >= 5
    for rule in rules:
        names = metric_names(rule["expr"])
        assert names and all(exported(n) for n in names), f"{rule['alert']}: {sorted(names)}"
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]
    alerts = {r["alert"] for r in rules}
    assert {
        "FabricfitPlacementsFailing",
        "FabricfitLowPlacementEfficiency",
        "FabricfitReconcileErrors",
    } <= alerts


def site_url() -> str:
    """The docs site's address (mkdocs.yml), which the chart's docsUrl defaults to."""
    for line in (REPO / "mkdocs.yml").read_text(encoding="utf-8").splitlines():
        if line.startswith("site_url:"):
            return line.split(":", 1)[1].strip().strip("'\"")
    raise AssertionError("mkdocs.yml has no site_url")


def runbook_page(url: str, base: str) -> Path:
    """The docs page a runbook URL of the site at ``base`` serves (mkdocs directory URLs)."""
    assert url.startswith(base) and url.endswith("/"), url
    return REPO / "docs" / (url.removeprefix(base).removesuffix("/") + ".md")


def test_every_alert_has_a_runbook_page_on_the_docs_site() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert values["docsUrl"] == site_url()
    rules = [r for g in rule_groups(render(MONITORING)) for r in g["rules"]]
    pages = {r["alert"]: runbook_page(r["annotations"]["runbook_url"], site_url()) for r in rules}
    assert all(page.parent == REPO / "docs" / "operations" / "runbooks" for page in pages.values())
    missing = {alert: str(page) for alert, page in pages.items() if not page.is_file()}
    assert missing == {}
    assert len(set(pages.values())) == len(pages), "two alerts share a runbook"
    for alert, page in pages.items():
        assert alert in page.read_text(encoding="utf-8"), f"{page.name} does not name {alert}"
    moved = render(MONITORING, "docsUrl=https://docs.example.com/ml/fabricfit/")
    urls = [r["annotations"]["runbook_url"] for g in rule_groups(moved) for r in g["rules"]]
    assert all(u.startswith("https://docs.example.com/ml/fabricfit/operations/") for u in urls)


def test_nodes_without_topology_alert_is_on_the_metric_the_operator_exports() -> None:
    (rule,) = [
        r
        for g in rule_groups(render(MONITORING, "prometheusRule.nodesWithoutTopologyThreshold=3"))
        for r in g["rules"]
        if r["alert"] == "FabricfitNodesWithoutTopology"
    ]
    assert rule["expr"] == "fabricfit_nodes_without_topology > 3"


def _promtool_rules(
    tmp_path: Path, groups: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    return subprocess.run(
        [promtool(), "check", "rules", str(path)], capture_output=True, text=True, check=False
    )


def test_promtool_accepts_the_alert_rules(tmp_path: Path) -> None:
    result = _promtool_rules(tmp_path, rule_groups(render(MONITORING)))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 9 rules found" in result.stdout


def test_promtool_parses_every_dashboard_query(tmp_path: Path) -> None:
    exprs = dashboard_exprs(dashboard(render()))
    for name, value in GRAFANA_VARIABLES.items():
        exprs = [e.replace(name, value) for e in exprs]
    records = [{"record": f"fabricfit_dashboard:query{i}", "expr": e} for i, e in enumerate(exprs)]
    result = _promtool_rules(tmp_path, [{"name": "dashboard", "rules": records}])
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_rejects_a_broken_rule(tmp_path: Path) -> None:
    broken = [{"name": "x", "rules": [{"alert": "X", "expr": "sum(fabricfit_free_gpus"}]}]
    assert _promtool_rules(tmp_path, broken).returncode != 0


@pytest.mark.parametrize("values", [None, MONITORING], ids=["default", "monitoring"])
def test_dashboard_config_map_holds_the_file_verbatim(values: Path | None) -> None:
    (config_map,) = [o for o in render(values) if o["kind"] == "ConfigMap"]
    text = config_map["data"]["fabricfit.json"]
    assert text.strip() == (CHART / "files" / "dashboards" / "fabricfit.json").read_text().strip()


def test_promtool_unit_tests_of_the_alerts(tmp_path: Path) -> None:
    """The alerts fire on the series they are about (promtool test rules), and only then."""
    groups = rule_groups(render(MONITORING))
    summaries = {r["alert"]: r["annotations"]["summary"] for g in groups for r in groups_rules(g)}
    runbooks = {
        r["alert"]: r["annotations"]["runbook_url"] for g in groups for r in groups_rules(g)
    }
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({"groups": groups}))
    job = 'namespace="team-a", name="llama"'
    failed = 'fabricfit_plans_total{result="failed", reason="InsufficientGPUs"}'

    def fires(alert: str, labels: dict[str, str], description: str) -> dict[str, Any]:
        annotations = {
            "summary": summaries[alert],
            "description": description,
            "runbook_url": runbooks[alert],
        }
        return {
            "eval_time": "50m",
            "alertname": alert,
            "exp_alerts": [{"exp_labels": labels, "exp_annotations": annotations}],
        }

    def silent(alert: str) -> dict[str, Any]:
        return {"eval_time": "50m", "alertname": alert, "exp_alerts": []}

    tests = {
        "rule_files": [str(rules)],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": failed, "values": "0+1x60"},
                    {
                        "series": f"fabricfit_placement_efficiency_ratio{{{job}}}",
                        "values": "0.5x60",
                    },
                    {
                        "series": f"fabricfit_tensor_groups_crossing_nvlink_domain{{{job}}}",
                        "values": "0x60",
                    },
                    {"series": 'fabricfit_build_info{version="0.1.0"}', "values": "1x60"},
                    {"series": "fabricfit_nodes_without_topology", "values": "4x60"},
                ],
                "alert_rule_test": [
                    fires(
                        "FabricfitPlacementsFailing",
                        {"severity": "warning", "reason": "InsufficientGPUs"},
                        "Plans failed (InsufficientGPUs) in the last 30 minutes and none "
                        "succeeded.",
                    ),
                    fires(
                        "FabricfitLowPlacementEfficiency",
                        {"severity": "info", "namespace": "team-a", "name": "llama"},
                        "TrainingTopology team-a/llama has placement efficiency 50%.",
                    ),
                    silent("FabricfitTensorGroupsOffNVLink"),
                    silent("FabricfitMetricsAbsent"),
                    fires(
                        "FabricfitNodesWithoutTopology",
                        {"severity": "warning"},
                        "4 GPU nodes carry no topology label under the operator label scheme; "
                        "plans cannot tell placements on them apart, and every one looks "
                        "optimal.",
                    ),
                ],
            },
            {
                "interval": "1m",
                "input_series": [
                    {"series": failed, "values": "0+1x60"},
                    {
                        "series": 'fabricfit_plans_total{result="made", reason="Planned"}',
                        "values": "0+1x60",
                    },
                    {"series": "fabricfit_nodes_without_topology", "values": "0x60"},
                ],
                "alert_rule_test": [
                    silent("FabricfitPlacementsFailing"),
                    silent("FabricfitNodesWithoutTopology"),
                    fires(
                        "FabricfitMetricsAbsent",
                        {"severity": "warning"},
                        "The fabricfit_build_info series is absent; the operator is down or not "
                        "scraped.",
                    ),
                ],
            },
        ],
    }
    path = tmp_path / "tests.yaml"
    path.write_text(yaml.safe_dump(tests))
    result = subprocess.run(
        [promtool(), "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def groups_rules(group: dict[str, Any]) -> list[dict[str, Any]]:
    return list(group["rules"])


def test_service_monitor_keeps_the_job_namespace_label() -> None:
    (endpoint,) = one(render(MONITORING), "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["honorLabels"] is True
    relabel = {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}
    objects = render(
        None,
        "metrics.serviceMonitor.enabled=true",
        "metrics.serviceMonitor.honorLabels=false",
        "metrics.serviceMonitor.relabelings[0].sourceLabels[0]=__meta_kubernetes_pod_node_name",
        "metrics.serviceMonitor.relabelings[0].targetLabel=node",
    )
    (endpoint,) = one(objects, "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["honorLabels"] is False and endpoint["relabelings"] == [relabel]


def test_dashboard_lands_where_the_grafana_sidecar_looks() -> None:
    config_map = one(render(), "ConfigMap")
    assert config_map["metadata"]["namespace"] == "ops"
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    moved = one(
        render(
            None,
            "grafana.dashboards.namespace=monitoring",
            "grafana.dashboards.labels.grafana_dashboard=null",
            "grafana.dashboards.labels.team-dashboards=fabricfit",
        ),
        "ConfigMap",
    )
    assert moved["metadata"]["namespace"] == "monitoring"
    assert moved["metadata"]["labels"]["team-dashboards"] == "fabricfit"
    assert "grafana_dashboard" not in moved["metadata"]["labels"]


def test_jobs_table_names_every_column() -> None:
    (table,) = [p for p in dashboard(render())["panels"] if p["type"] == "table"]
    refs = [t["refId"] for t in table["targets"]]
    organize = next(t for t in table["transformations"] if t["id"] == "organize")["options"]
    renamed = organize["renameByName"]
    assert {f"Value #{ref}" for ref in refs} | {"namespace", "name"} == set(renamed)
    assert all("Value" not in title for title in renamed.values())
    units = {o["matcher"]["options"] for o in table["fieldConfig"]["overrides"]}
    assert units == {renamed[f"Value #{ref}"] for ref in refs}
    # One row per job: every query keeps exactly the job's labels.
    assert all(t["expr"].startswith("sum by (namespace, name) (") for t in table["targets"])


def test_step_time_is_shown_per_job() -> None:
    board = dashboard(render())
    panels = [
        p
        for p in board["panels"]
        if any("fabricfit_predicted_step_comm_seconds" in t["expr"] for t in p.get("targets", []))
        and p["type"] == "timeseries"
    ]
    assert panels
    for panel in panels:
        assert panel["repeat"] == "topology"
        assert panel["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "none"
        for target in panel["targets"]:
            assert 'name="$topology"' in target["expr"], target["expr"]
