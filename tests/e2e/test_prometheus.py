"""A real Prometheus server (Debian package) scrapes the operator the way kube-prometheus-stack
does: through the chart's Service and ServiceMonitor, with the scrape job and relabel rules the
prometheus-operator generates for it (``helpers.servicemonitor``) on ``kubernetes_sd`` of the
Service's Endpoints, not a static target. The per-job series keep the TrainingTopology's
``namespace``, every dashboard query returns data for the placed job, and ``promtool check
metrics`` accepts the live endpoint.

The operator runs as a local process, so the test gives the chart's Service no selector and writes
its Endpoints itself. The API server refuses loopback addresses there, so the Endpoints carry a
documentation address (RFC 5737, never contacted) and one relabel rule appended after the
generated ones points the discovered target at the operator on loopback; every label the generated
rules derive is kept.
Prometheus listens on loopback with a temporary storage directory and is stopped in teardown.
The session operator is stopped meanwhile so that the scraped operator is the one acting.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit_dev.chart import dashboard, one, render
from fabricfit_dev.cluster.processes import free_port
from fabricfit_dev.e2e.objects import TT, indexed_job, make_pool, topology, wait_condition
from fabricfit_dev.e2e.servicemonitor import scrape_configs
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

SCRAPE_INTERVAL = "1s"


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is missing: run hack/tools.sh (make test does)"
    return found


def prometheus_server() -> Path:
    """The server ``hack/cluster build`` compiled (Debian's has no kubernetes_sd)."""
    from fabricfit_dev.cluster import binaries

    server = binaries.locate().prometheus
    assert server.exists(), f"{server} is missing: run hack/cluster build (make test does)"
    return server


def http_get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return str(resp.read().decode())


def ready(url: str) -> bool:
    try:
        http_get(url)
    except OSError:
        return False
    return True


@pytest.fixture
def scraped_operator(
    operator: OperatorProcess, kubeconfig: Path, tmp_path: Path
) -> Iterator[tuple[OperatorProcess, int]]:
    port = free_port()
    operator.stop()  # only the scraped operator may act during this test
    proc = OperatorProcess(kubeconfig, tmp_path, "--metrics-port", str(port))
    try:
        proc.start()
        wait_for(lambda: ready(f"http://127.0.0.1:{port}/metrics"), what="the metrics endpoint")
        yield proc, port
    finally:
        proc.stop()
        operator.start()


# RFC 5737 TEST-NET-2: valid in Endpoints, never contacted (the scrape is sent to loopback).
PLACEHOLDER_ADDRESS = "198.51.100.10"
TO_LOOPBACK = {
    "source_labels": ["__address__"],
    "regex": r"[^:]+:(\d+)",
    "target_label": "__address__",
    "replacement": "127.0.0.1:$1",
}


@pytest.fixture
def release(
    core: Any, scraped_operator: tuple[OperatorProcess, int]
) -> Iterator[list[dict[str, Any]]]:
    """The chart rendered into a fresh release namespace (ServiceMonitor on), its metrics
    Service applied without a selector, and Endpoints pointing at the scraped operator."""
    _, metrics_port = scraped_operator
    namespace = f"ffmon-{uuid.uuid4().hex[:6]}"
    objects = render(
        None,
        "metrics.serviceMonitor.enabled=true",
        f"metrics.serviceMonitor.interval={SCRAPE_INTERVAL}",
        release="ff",
        namespace=namespace,
    )
    service = one(objects, "Service")
    del service["spec"]["selector"]
    port_name = service["spec"]["ports"][0]["name"]
    endpoints = {
        "metadata": {"name": service["metadata"]["name"], "labels": service["metadata"]["labels"]},
        "subsets": [
            {
                "addresses": [{"ip": PLACEHOLDER_ADDRESS}],
                "ports": [{"name": port_name, "port": metrics_port, "protocol": "TCP"}],
            }
        ],
    }
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        core.create_namespaced_service(namespace, service)
        core.create_namespaced_endpoints(namespace, endpoints)
        yield objects
    finally:
        core.delete_namespace(namespace)


@pytest.fixture
def prometheus(release: list[dict[str, Any]], kubeconfig: Path, tmp_path: Path) -> Iterator[str]:
    """A Prometheus server with the scrape jobs generated from the chart's ServiceMonitor, plus
    the same job without honorLabels (to show what it would change); yields its base URL."""
    (generated,) = scrape_configs(one(release, "ServiceMonitor"), kubeconfig)
    job = {**generated, "relabel_configs": [*generated["relabel_configs"], TO_LOOPBACK]}
    # The copy's series would equal the real job's (the relabelings set job, namespace,
    # instance alike): one more target label keeps them apart.
    mark = {"target_label": "scrape", "replacement": "no-honor"}
    plain = {**job, "job_name": f"{job['job_name']}/no-honor", "honor_labels": False,
             "relabel_configs": [*job["relabel_configs"], mark]}  # fmt: skip
    config = tmp_path / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": "1s"},
                "scrape_configs": [job, plain],
            }
        )
    )
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [str(prometheus_server()), f"--config.file={config}",
         f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: proc.poll() is None and ready(f"{url}/-/ready"), what="Prometheus ready")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


def query(url: str, promql: str) -> list[dict[str, Any]]:
    body = json.loads(http_get(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"))
    assert body["status"] == "success", body
    return list(body["data"]["result"])


def test_prometheus_scrapes_the_placement_efficiency(
    prometheus: str,
    release: list[dict[str, Any]],
    scraped_operator: tuple[OperatorProcess, int],
    core: Any,
    custom: Any,
    batch: Any,
    namespace: str,
) -> None:
    _, metrics_port = scraped_operator
    make_pool(core, "prom", rail_groups_per_spine=2, nodes_per_rail_group=2)
    batch.create_namespaced_job(namespace, indexed_job("scraped", 4, "prom"))
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], topology("scraped", "scraped", {"tensor": 8, "data": 4})
    )
    tt = wait_condition(custom, namespace, "scraped", "Placed", "True", timeout=120)
    job = f'namespace="{namespace}", name="scraped"'
    service = one(release, "Service")["metadata"]
    monitor_job = scrape_configs(one(release, "ServiceMonitor"), Path())[0]["job_name"]

    result = wait_for(
        lambda: query(
            prometheus,
            f'fabricfit_placement_efficiency_ratio{{{job}, job="{service["name"]}"}}',
        ),
        timeout_seconds=60,
        what="the efficiency series in Prometheus, with the TrainingTopology's namespace",
    )
    (series,) = result  # only the honorLabels job keeps the job's namespace
    assert series["metric"]["service"] == service["name"]
    assert series["metric"]["endpoint"] == "metrics"
    assert "exported_namespace" not in series["metric"]
    assert float(series["value"][1]) == pytest.approx(tt["status"]["efficiency"])
    assert 0 < float(series["value"][1]) <= 1
    # The ServiceMonitor's own job is the only one that keeps the label; without honorLabels the
    # series would name the operator's namespace and hide the job's as exported_namespace.
    renamed = wait_for(  # the comparison job scrapes on its own schedule
        lambda: query(
            prometheus, f'fabricfit_placement_efficiency_ratio{{exported_namespace="{namespace}"}}'
        ),
        timeout_seconds=30,
        what="the comparison job's series, namespace renamed to exported_namespace",
    )
    assert [s["metric"]["namespace"] for s in renamed] == [service["namespace"]]
    assert monitor_job.startswith(f"serviceMonitor/{service['namespace']}/")
    assert_every_dashboard_query_returns_data(prometheus, namespace, "scraped")

    by_dimension = {
        s["metric"]["dimension"]: float(s["value"][1])
        for s in query(prometheus, f"fabricfit_predicted_step_comm_seconds{{{job}}}")
    }
    predicted = tt["status"]["predicted"]
    assert sum(by_dimension.values()) == pytest.approx(predicted["stepCommSeconds"], rel=1e-6)
    groups = wait_for(
        lambda: query(prometheus, f'fabricfit_parallel_groups{{{job}, dimension="data"}}'),
        what="the group counts in Prometheus",
    )
    assert float(groups[0]["value"][1]) == 8.0  # tensor 8 x data 4: 8 DP groups of 4
    # A rail group here holds 2 pods, so the 4-pod job spans both: every DP group crosses, and
    # the gradient all-reduce sends bytes over the spine.
    crossing = query(prometheus, f"fabricfit_data_groups_crossing_rail_group{{{job}}}")
    assert float(crossing[0]["value"][1]) == 8.0
    spine = query(prometheus, f"fabricfit_step_spine_crossing_bytes{{{job}}}")
    assert float(spine[0]["value"][1]) > 0
    placed = wait_for(
        lambda: query(prometheus, "fabricfit_time_to_placed_seconds_count"),
        what="time to placed",
    )
    assert float(placed[0]["value"][1]) >= 1
    tiers = {
        s["metric"]["tier"]
        for s in query(prometheus, f'fabricfit_largest_placeable_gpus{{job="{service["name"]}"}}')
    }
    assert tiers == {"node", "nvlink_domain", "rail_group", "spine", "cluster"}
    api = query(prometheus, 'sum(fabricfit_kubernetes_api_requests_total{code=~"2.."})')
    assert float(api[0]["value"][1]) > 0

    live = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
    checked = subprocess.run(
        [tool("promtool"), "check", "metrics"],
        input=live,
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


# Panels whose empty result is the healthy state (no handler raised).
MAY_BE_EMPTY = ("fabricfit_reconcile_errors_total",)


def assert_every_dashboard_query_returns_data(url: str, namespace: str, name: str) -> None:
    """Each query of the chart's dashboard, with the variables set to the placed job, returns at
    least one series from the real Prometheus (only error panels may show nothing)."""
    board = dashboard(render())
    variables = {
        "$__rate_interval": "1m",
        "$namespace": namespace,
        "$topology": name,
        "$gpus_per_pod": "8",
    }
    empty = []
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for variable, value in variables.items():
                expr = expr.replace(variable, value)
            if any(metric in expr for metric in MAY_BE_EMPTY):
                continue
            if not wait_for(lambda e=expr: query(url, e) or None, timeout_seconds=30, what=expr):
                empty.append(f"{panel['title']}: {expr}")
    assert empty == []
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            metric = variable["query"]["query"].split("(", 1)[1].split(",", 1)[0].split("{")[0]
            assert query(url, f'{metric}{{namespace="{namespace}"}}'), variable["name"]
