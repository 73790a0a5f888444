"""docs/reference/metrics.md: every metric the operator exports, from its registry.

``fabricfit.metrics.OperatorMetrics`` defines every metric in a registry of its own; this reads
name, type, labels and help from each metric object (and from the scrape-time collector of
Kubernetes API requests), in the order of ``EXPORTED_NAMES``, which the chart's alerts and
dashboard are checked against.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Info
from prometheus_client.metrics import MetricWrapperBase

from fabricfit import metrics as operator_metrics
from fabricfit_dev.docsgen.markdown import cell, code, header, page, table

INTRO = (
    "The operator serves these at `/metrics` on `--metrics-port` (chart: `metrics.port`). "
    "Names carry the `fabricfit_` prefix and base units; per-job series carry the "
    "TrainingTopology's `namespace` and `name` and disappear when it is deleted or loses its "
    "plan. Histograms also expose `_bucket`, `_sum` and `_count` series. How to scrape them and "
    "the dashboard: [Monitoring](../operations/monitoring.md)."
)
SAMPLE_REQUESTS = {("get", "pods", 200): 1}  # the API collector only has labels once it counts


@dataclass(frozen=True)
class MetricDoc:
    name: str
    kind: str
    labels: tuple[str, ...]
    help: str


def exported() -> list[MetricDoc]:
    """Every exported metric, as a scrape names it, in ``EXPORTED_NAMES`` order."""
    metrics = operator_metrics.OperatorMetrics(api_requests=lambda: SAMPLE_REQUESTS)
    metrics.set_version("0")  # an info metric's labels exist once it is set
    found = {m.name: m for m in _wrapped(metrics)}
    for family in metrics.registry.collect():
        # Collectors and info metrics: their labels are only seen on a sample.
        name = family.samples[0].name if family.samples else family.name
        if name in operator_metrics.EXPORTED_NAMES and name not in found:
            labels = tuple(family.samples[0].labels)
            kind = "gauge" if family.type == "info" else family.type
            found[name] = MetricDoc(name, kind, labels, family.documentation)
    missing = set(operator_metrics.EXPORTED_NAMES) - set(found)
    if missing:
        raise SystemExit(f"docsgen: no definition found for {sorted(missing)}")
    return [found[name] for name in operator_metrics.EXPORTED_NAMES]


def _wrapped(metrics: operator_metrics.OperatorMetrics) -> list[MetricDoc]:
    docs = []
    for value in vars(metrics).values():
        if not isinstance(value, MetricWrapperBase):
            continue
        name, kind = value._name, str(value._type)  # set on every metric class
        if isinstance(value, Info):
            continue
        if isinstance(value, Counter):
            name += "_total"
        labels = tuple(value._labelnames)
        docs.append(MetricDoc(name, kind, labels, value._documentation))
    return docs


def render_page() -> str:
    lines = header("Metrics", "fabricfit.metrics (the operator's registry)", INTRO)
    rows = [
        [code(m.name), m.kind, ", ".join(code(label) for label in m.labels), cell(m.help)]
        for m in exported()
    ]
    lines += table(["metric", "type", "labels", "meaning"], rows)
    return page(lines)
