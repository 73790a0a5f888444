"""Prometheus metrics of the operator (prometheus-client), in a registry of their own.

Theory of operation
-------------------
:class:`OperatorMetrics` owns every metric in one ``CollectorRegistry`` (a fresh one per
instance, so tests never share state) and offers verbs for what the operator observed: a
reconcile ran, a job's plan was assessed, a job went away, the cluster's free GPUs were measured.
It computes nothing itself: plan quality and fragmentation come from
:mod:`fabricfit.placement.quality`, job facts from the TrainingTopology's ``status``.

Names follow the Prometheus conventions: ``fabricfit_`` prefix, base units (seconds, bytes,
ratio), ``_total`` on counters, bounded labels. Per-job gauges carry ``namespace`` and ``name``
of the TrainingTopology and are removed when it is deleted or loses its plan, so the series
count follows the number of live jobs. Kubernetes API requests are read from the operator's
REST client counter at scrape time (``rest.requests``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, start_http_server
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from fabricfit.placement.layout import GROUP_KINDS
from fabricfit.placement.quality import FreeCapacity, PlanQuality

JOB = ("namespace", "name")
RECONCILE_BUCKETS_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
PLACED_BUCKETS_SECONDS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600)
RequestCounts = Mapping[tuple[str, str, int], int]
#: At most this many link places (rail groups' leaf uplinks, spine blocks' uplinks) are
#: exported, the busiest first: one series per place, never per node, and never unbounded.
MAX_LINK_PLACES = 256

# Every metric name the operator exports (without _bucket/_sum/_count/_created suffixes); the
# chart's dashboard and alert rules may only use these (checked by a test).
EXPORTED_NAMES: tuple[str, ...] = (
    "fabricfit_build_info",
    "fabricfit_predicted_step_comm_seconds",
    "fabricfit_lower_bound_step_comm_seconds",
    "fabricfit_placement_efficiency_ratio",
    "fabricfit_parallel_groups",
    "fabricfit_tensor_groups_crossing_nvlink_domain",
    "fabricfit_data_groups_crossing_rail_group",
    "fabricfit_step_spine_crossing_bytes",
    "fabricfit_predicted_decode_token_comm_seconds",
    "fabricfit_predicted_prefill_comm_seconds",
    "fabricfit_predicted_kv_transfer_seconds",
    "fabricfit_gpu_choice_enforced",
    "fabricfit_neighbour_slowdown_seconds",
    "fabricfit_slowdown_added_to_others_seconds",
    "fabricfit_link_utilisation_ratio",
    "fabricfit_schedulable_gpus",
    "fabricfit_free_gpus",
    "fabricfit_nodes_without_topology",
    "fabricfit_free_domains",
    "fabricfit_largest_placeable_gpus",
    "fabricfit_largest_placeable_pods",
    "fabricfit_plans_total",
    "fabricfit_reconcile_duration_seconds",
    "fabricfit_reconcile_errors_total",
    "fabricfit_pods_pinned_total",
    "fabricfit_time_to_placed_seconds",
    "fabricfit_kubernetes_api_requests_total",
)


class ApiRequestCollector(Collector):
    """``fabricfit_kubernetes_api_requests_total`` from the REST client's request counter."""

    def __init__(self, counts: Callable[[], RequestCounts | None]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "fabricfit_kubernetes_api_requests",
            "Kubernetes API requests made by the operator's REST client (kopf's own watches "
            "and patches are not included), by verb, resource and HTTP status code "
            "(0: no response).",
            labels=["verb", "resource", "code"],
        )
        for (verb, resource, code), count in sorted(_snapshot(self._counts() or {}).items()):
            family.add_metric([verb, resource, str(code)], count)
        yield family

    def describe(self) -> Iterable[Metric]:
        return []  # values only exist at scrape time


class OperatorMetrics:
    """Every metric of one operator process (see the module doc)."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        api_requests: Callable[[], RequestCounts | None] | None = None,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._jobs: set[tuple[str, str]] = set()
        self._placed: set[str] = set()
        self._link_places: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._define_job_metrics()
        self._define_job_phase_metrics()
        self._define_cluster_metrics()
        self._define_activity_metrics()
        self.api_requests: Callable[[], RequestCounts | None] = api_requests or (lambda: None)
        self.registry.register(ApiRequestCollector(self._request_counts))

    def _request_counts(self) -> RequestCounts | None:
        return self.api_requests()  # late-bound: the REST client exists only after startup

    def _gauge(self, name: str, doc: str, labels: Iterable[str] = ()) -> Gauge:
        return Gauge(name, doc, list(labels), registry=self.registry)

    def _define_job_metrics(self) -> None:
        self.info = Info("fabricfit_build", "Version of the operator.", registry=self.registry)
        self.predicted = self._gauge(
            "fabricfit_predicted_step_comm_seconds",
            "Predicted communication seconds of one training step, per parallelism dimension "
            "(sum over dimension: the whole step).",
            (*JOB, "dimension"),
        )
        self.lower_bound = self._gauge(
            "fabricfit_lower_bound_step_comm_seconds",
            "Lower bound of the step communication seconds on this fabric (best placement).",
            JOB,
        )
        self.efficiency = self._gauge(
            "fabricfit_placement_efficiency_ratio",
            "Placement efficiency: lower bound / predicted step communication (1 = optimal).",
            JOB,
        )
        self.groups = self._gauge(
            "fabricfit_parallel_groups",
            "Communication groups of the job per parallelism dimension.",
            (*JOB, "dimension"),
        )
        self.tp_crossing = self._gauge(
            "fabricfit_tensor_groups_crossing_nvlink_domain",
            "Tensor-parallel groups whose ranks span more than one NVLink domain.",
            JOB,
        )
        self.dp_crossing = self._gauge(
            "fabricfit_data_groups_crossing_rail_group",
            "Data-parallel groups whose ranks span nodes outside one rail group.",
            JOB,
        )
        self.spine_bytes = self._gauge(
            "fabricfit_step_spine_crossing_bytes",
            "Bytes one training step sends across the spine (above the leaf switches).",
            JOB,
        )

    def _define_job_phase_metrics(self) -> None:
        """Per job: a served model's phases, who picks its GPUs, and its neighbours' share."""
        self.decode_token = self._gauge(
            "fabricfit_predicted_decode_token_comm_seconds",
            "Served models: predicted communication of one decode step (per output token).",
            JOB,
        )
        self.prefill = self._gauge(
            "fabricfit_predicted_prefill_comm_seconds",
            "Served models: predicted communication of one prefill.",
            JOB,
        )
        self.kv_transfer = self._gauge(
            "fabricfit_predicted_kv_transfer_seconds",
            "Disaggregated serving: predicted KV-cache transfer of one request to or from the "
            "paired TrainingTopology (on the side planned second).",
            JOB,
        )
        self.gpu_choice = self._gauge(
            "fabricfit_gpu_choice_enforced",
            "1 when fabricfit makes the cluster use the GPUs it planned (DRA claims it "
            "allocates), 0 when the device plugin or kube-scheduler picks them (not enforced: "
            "priced on what they hand out).",
            JOB,
        )
        self.neighbour_slowdown = self._gauge(
            "fabricfit_neighbour_slowdown_seconds",
            "Seconds per step the links the job shares with the jobs running when it was "
            "planned add to its communication (included in the predicted step).",
            JOB,
        )
        self.added_to_others = self._gauge(
            "fabricfit_slowdown_added_to_others_seconds",
            "Seconds per step the job adds to the communication of the jobs running when it "
            "was planned, summed over them.",
            JOB,
        )

    def _define_cluster_metrics(self) -> None:
        self.schedulable_gpus = self._gauge(
            "fabricfit_schedulable_gpus", "GPUs on available (Ready, schedulable) nodes."
        )
        self.free_gpus = self._gauge(
            "fabricfit_free_gpus",
            "GPUs free on available nodes, after pods and other plans' reservations.",
        )
        self.nodes_without_topology = self._gauge(
            "fabricfit_nodes_without_topology",
            "GPU nodes (allocatable or DRA) whose labels name no fabric tier under the "
            "operator's label scheme (plans treat them as a flat fabric); CPU-only nodes "
            "are not counted.",
        )
        self.free_domains = self._gauge(
            "fabricfit_free_domains",
            "Domains of a tier whose every GPU is free (node, nvlink_domain, rail_group, spine, "
            "cluster).",
            ("tier",),
        )
        self.largest_gpus = self._gauge(
            "fabricfit_largest_placeable_gpus",
            "Free GPUs of the emptiest single domain of a tier: the largest job that fits "
            "without crossing it.",
            ("tier",),
        )
        self.link_utilisation = self._gauge(
            "fabricfit_link_utilisation_ratio",
            "Average load of the running jobs' predicted traffic over the capacity of the "
            "busiest shared link of a place (class=leaf: a rail group's leaf uplinks, "
            "class=spine: a spine block's uplinks to the core), at most "
            f"{MAX_LINK_PLACES} places, the busiest.",
            ("class", "place"),
        )
        self.largest_pods = self._gauge(
            "fabricfit_largest_placeable_pods",
            "Pods of gpus_per_pod GPUs (aligned windows) that fit in the emptiest single domain "
            "of a tier.",
            ("tier", "gpus_per_pod"),
        )

    def _define_activity_metrics(self) -> None:
        self.plans = Counter(
            "fabricfit_plans",
            "Plans made (result=made: a new or changed plan written) or failed "
            "(result=failed: Planned turned False), by the Planned reason.",
            ["result", "reason"],
            registry=self.registry,
        )
        self.duration = Histogram(
            "fabricfit_reconcile_duration_seconds",
            "Duration of one handler call (reconcile, pin or release).",
            ["handler"],
            buckets=RECONCILE_BUCKETS_SECONDS,
            registry=self.registry,
        )
        self.errors = Counter(
            "fabricfit_reconcile_errors",
            "Handler calls that raised, by handler and exception type.",
            ["handler", "error"],
            registry=self.registry,
        )
        self.pinned = Counter(
            "fabricfit_pods_pinned", "Pods pinned to their planned node.", registry=self.registry
        )
        self.time_to_placed = Histogram(
            "fabricfit_time_to_placed_seconds",
            "Seconds from TrainingTopology creation until every pod was bound to its planned "
            "node (observed once per TrainingTopology).",
            buckets=PLACED_BUCKETS_SECONDS,
            registry=self.registry,
        )

    # -- verbs ---------------------------------------------------------------------------

    def set_version(self, version: str) -> None:
        self.info.info({"version": version})

    def observe_handler(self, handler: str, seconds: float, error: BaseException | None) -> None:
        self.duration.labels(handler).observe(seconds)
        if error is not None:
            self.errors.labels(handler, type(error).__name__).inc()

    def count_plan(self, result: str, reason: str) -> None:
        self.plans.labels(result, reason).inc()

    def count_pins(self, pods: int) -> None:
        if pods > 0:
            self.pinned.inc(pods)

    def observe_placed(self, uid: str, seconds: float) -> bool:
        """Time to placed, once per object uid; False when already observed."""
        with self._lock:
            if not uid or uid in self._placed:
                return False
            self._placed.add(uid)
        self.time_to_placed.observe(max(0.0, seconds))
        return True

    def set_job(self, job: tuple[str, str], status: Mapping[str, Any]) -> None:
        """Per-job gauges from a status with a plan; a status without one removes them."""
        predicted = status.get("predicted") or {}
        by_dimension = predicted.get("byDimension") or {}
        if not status.get("pods") or not isinstance(predicted.get("stepCommSeconds"), int | float):
            self.forget_job(job)
            return
        with self._lock:
            self._jobs.add(job)
        for dim in GROUP_KINDS:
            self.predicted.labels(*job, dim).set(float(by_dimension.get(dim) or 0.0))
        _set_or_remove(self.lower_bound, job, status.get("lowerBoundSeconds"))
        _set_or_remove(self.efficiency, job, status.get("efficiency"))
        _set_or_remove(self.decode_token, job, predicted.get("decodeTokenCommSeconds"))
        _set_or_remove(self.prefill, job, predicted.get("prefillCommSeconds"))
        _set_or_remove(self.kv_transfer, job, predicted.get("kvTransferSeconds"))
        choice = status.get("gpuChoice")
        enforced = None if choice is None else float(choice == "enforced")
        _set_or_remove(self.gpu_choice, job, enforced)
        _set_or_remove(self.neighbour_slowdown, job, predicted.get("neighbourSlowdownSeconds"))
        _set_or_remove(self.added_to_others, job, predicted.get("slowdownAddedToOthersSeconds"))

    def set_quality(
        self, job: tuple[str, str], quality: PlanQuality | None, groups: Mapping[str, int]
    ) -> None:
        with self._lock:
            if job not in self._jobs:
                return
        for dim in GROUP_KINDS:
            self.groups.labels(*job, dim).set(groups.get(dim, 0))
        if quality is None:
            for gauge in (self.tp_crossing, self.dp_crossing, self.spine_bytes):
                gauge.remove(*job)
            return
        self.tp_crossing.labels(*job).set(quality.tensor_groups_crossing_nvlink)
        self.dp_crossing.labels(*job).set(quality.data_groups_crossing_rail_group)
        self.spine_bytes.labels(*job).set(quality.spine_bytes_per_step)

    def forget_job(self, job: tuple[str, str]) -> None:
        """Remove every per-job series of ``job`` (deleted, or no plan any more)."""
        with self._lock:
            self._jobs.discard(job)
        selector = dict(zip(JOB, job, strict=True))
        for gauge in self._job_gauges():
            gauge.remove_by_labels(selector)

    def _job_gauges(self) -> tuple[Gauge, ...]:
        return (
            self.predicted,
            self.lower_bound,
            self.efficiency,
            self.groups,
            self.tp_crossing,
            self.dp_crossing,
            self.spine_bytes,
            self.decode_token,
            self.prefill,
            self.kv_transfer,
            self.gpu_choice,
            self.neighbour_slowdown,
            self.added_to_others,
        )

    def jobs(self) -> set[tuple[str, str]]:
        with self._lock:
            return set(self._jobs)

    def set_fragmentation(self, fragmentation: FreeCapacity) -> None:
        self.schedulable_gpus.set(fragmentation.schedulable_gpus)
        self.free_gpus.set(fragmentation.free_gpus)
        for tier in fragmentation.tiers:
            self.free_domains.labels(tier.tier).set(tier.free_domains)
            self.largest_gpus.labels(tier.tier).set(tier.largest_free_gpus)
            for size, pods in tier.largest_free_pods.items():
                self.largest_pods.labels(tier.tier, str(size)).set(pods)

    def set_link_utilisation(self, shares: Mapping[tuple[str, str], float]) -> None:
        """One ratio per (link class, place), the ``MAX_LINK_PLACES`` busiest; places no
        longer loaded (or no longer among the busiest) are removed."""
        busiest = sorted(shares.items(), key=lambda item: (-item[1], item[0]))[:MAX_LINK_PLACES]
        kept = dict(busiest)
        with self._lock:
            gone = self._link_places - set(kept)
            self._link_places = set(kept)
        for key in gone:
            self.link_utilisation.remove(*key)
        for (kind, place), share in kept.items():
            self.link_utilisation.labels(kind, place).set(share)

    def set_nodes_without_topology(self, nodes: int) -> None:
        self.nodes_without_topology.set(nodes)

    def serve(self, port: int, address: str = "0.0.0.0") -> Any:
        """Start the /metrics HTTP server in a daemon thread; returns (server, thread)."""
        return start_http_server(port, addr=address, registry=self.registry)


def _snapshot(counts: RequestCounts) -> dict[tuple[str, str, int], int]:
    """A copy of a counter the event loop may grow while the HTTP thread scrapes it."""
    for _ in range(3):
        try:
            return dict(counts)
        except RuntimeError:  # "dictionary changed size during iteration"
            continue
    return {}


def _set_or_remove(gauge: Gauge, job: tuple[str, str], value: Any) -> None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        gauge.labels(*job).set(float(value))
    else:
        gauge.remove(*job)
