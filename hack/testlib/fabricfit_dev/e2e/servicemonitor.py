"""The Prometheus scrape config the prometheus-operator generates for a ServiceMonitor.

kube-prometheus-stack does not scrape a static target: its operator turns each ServiceMonitor
endpoint into a ``kubernetes_sd_configs`` job on the Service's Endpoints plus relabel rules, and
those rules decide the labels every series ends up with (``namespace`` becomes the Service's
namespace, the scraped ``namespace`` becomes ``exported_namespace`` unless ``honorLabels``).
This module writes that job the way the operator's config generator does (prometheus-operator
``pkg/prometheus/promcfg.go``, ``generateServiceMonitorConfig``, role ``endpoints``), so an e2e
Prometheus sees what a real one would. Only the parts our chart's ServiceMonitor uses are
covered: ``matchLabels`` selectors, ``namespaceSelector.matchNames``, a named port, path,
interval, timeout, honorLabels, relabelings and metricRelabelings.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def sanitize(label: str) -> str:
    """A Kubernetes label key as Prometheus meta labels spell it (``app.kubernetes.io/name`` →
    ``app_kubernetes_io_name``)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", label)


def _selector_rules(match_labels: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "action": "keep",
            "source_labels": [
                f"__meta_kubernetes_service_label_{sanitize(key)}",
                f"__meta_kubernetes_service_labelpresent_{sanitize(key)}",
            ],
            "regex": f"({value});true",
        }
        for key, value in sorted(match_labels.items())
    ]


def _target_rules(port: str) -> list[dict[str, Any]]:
    kind = ["__meta_kubernetes_endpoint_address_target_kind"]
    kind.append("__meta_kubernetes_endpoint_address_target_name")
    port_name = ["__meta_kubernetes_endpoint_port_name"]
    return [
        {"action": "keep", "source_labels": port_name, "regex": port},
        {"source_labels": kind, "separator": ";", "regex": "Node;(.*)",
         "replacement": "${1}", "target_label": "node"},
        {"source_labels": kind, "separator": ";", "regex": "Pod;(.*)",
         "replacement": "${1}", "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "service"},
        {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
        {"source_labels": ["__meta_kubernetes_pod_container_name"], "target_label": "container"},
        {"action": "drop", "source_labels": ["__meta_kubernetes_pod_phase"],
         "regex": "(Failed|Succeeded)"},
        {"source_labels": ["__meta_kubernetes_service_name"], "target_label": "job",
         "replacement": "${1}"},
        {"target_label": "endpoint", "replacement": port},
    ]  # fmt: skip


def scrape_configs(monitor: dict[str, Any], kubeconfig: Path) -> list[dict[str, Any]]:
    """One scrape job per endpoint of ``monitor``; ``kubeconfig`` replaces the in-cluster
    service-account credentials (this Prometheus runs outside the cluster)."""
    meta, spec = monitor["metadata"], monitor["spec"]
    names = spec.get("namespaceSelector", {}).get("matchNames") or [meta["namespace"]]
    jobs = []
    for i, endpoint in enumerate(spec["endpoints"]):
        job: dict[str, Any] = {
            "job_name": f"serviceMonitor/{meta['namespace']}/{meta['name']}/{i}",
            "honor_labels": bool(endpoint.get("honorLabels", False)),
            "kubernetes_sd_configs": [
                {
                    "role": "endpoints",
                    "kubeconfig_file": str(kubeconfig),
                    "namespaces": {"names": list(names)},
                }
            ],
            "metrics_path": endpoint.get("path", "/metrics"),
            "relabel_configs": [
                {"source_labels": ["job"], "target_label": "__tmp_prometheus_job_name"},
                *_selector_rules(spec["selector"].get("matchLabels") or {}),
                *_target_rules(endpoint["port"]),
                *[_snake(r) for r in endpoint.get("relabelings") or []],
            ],
            "metric_relabel_configs": [_snake(r) for r in endpoint.get("metricRelabelings") or []],
        }
        if endpoint.get("interval"):
            job["scrape_interval"] = endpoint["interval"]
        if endpoint.get("scrapeTimeout"):
            job["scrape_timeout"] = endpoint["scrapeTimeout"]
        jobs.append(job)
    return jobs


def _snake(rule: dict[str, Any]) -> dict[str, Any]:
    """A ServiceMonitor relabeling (camelCase) as a Prometheus relabel_config (snake_case)."""
    return {re.sub(r"([A-Z])", r"_\1", key).lower(): value for key, value in rule.items()}
