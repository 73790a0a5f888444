"""A real Prometheus server (Debian package) scrapes the operator while it places a job; PromQL
returns the job's placement efficiency, and ``promtool check metrics`` accepts the live endpoint.

Prometheus listens on loopback with a temporary storage directory and is stopped in teardown.
The session operator is stopped meanwhile so that the scraped operator is the one acting.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.cluster import TT, indexed_job, make_pool, topology, wait_condition
from helpers.operator import OperatorProcess, free_port
from helpers.waiting import wait_for

SCRAPE_INTERVAL = "1s"


def tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"{name} is missing: run hack/tools.sh (make test does)"
    return found


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


@pytest.fixture
def prometheus(scraped_operator: tuple[OperatorProcess, int], tmp_path: Path) -> Iterator[str]:
    """A Prometheus server scraping the operator every second; yields its base URL."""
    _, metrics_port = scraped_operator
    config = tmp_path / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": "1s"},
                "scrape_configs": [
                    {
                        "job_name": "fabricfit",
                        "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}],
                    }
                ],
            }
        )
    )
    port = free_port()
    log = (tmp_path / "prometheus.log").open("wb")
    proc = subprocess.Popen(
        [tool("prometheus"), f"--config.file={config}",
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

    result = wait_for(
        lambda: query(prometheus, f"fabricfit_placement_efficiency_ratio{{{job}}}"),
        timeout_seconds=60,
        what="the efficiency series in Prometheus",
    )
    (series,) = result
    assert series["metric"]["job"] == "fabricfit"
    assert float(series["value"][1]) == pytest.approx(tt["status"]["efficiency"])
    assert 0 < float(series["value"][1]) <= 1

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
    tiers = {s["metric"]["tier"] for s in query(prometheus, "fabricfit_largest_placeable_gpus")}
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
