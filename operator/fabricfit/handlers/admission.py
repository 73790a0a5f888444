"""Kueue handlers: fabricfit as the AdmissionCheck controller ``fabricfit.dev/placement``.

Registered only when the API server serves Kueue's v1beta2 Workloads, AdmissionChecks and
ResourceFlavors at start-up (``fabricfit run`` asks discovery). Three indexes feed the
reconcile's ``Views.kueue`` (each job's Workload, fabricfit's check names, the flavors);
Workload events reconcile the job's TrainingTopology, AdmissionCheck events mark fabricfit's
checks Active (:mod:`fabricfit.reconcile.workloadevents`). No handler here writes kopf's own
annotations or finalizers onto Kueue's objects: they are events and indexes only.
"""

from __future__ import annotations

from typing import Any

import kopf

from fabricfit.api.constants import KUEUE_GROUP, KUEUE_VERSION
from fabricfit.handlers.common import views_of
from fabricfit.handlers.topologies import report
from fabricfit.metrics import OperatorMetrics
from fabricfit.policy.kueuecheck import is_ours
from fabricfit.reconcile import workloadevents
from fabricfit.reconcile.observe import timed

WORKLOADS = (KUEUE_GROUP, KUEUE_VERSION, "workloads")
CHECKS = (KUEUE_GROUP, KUEUE_VERSION, "admissionchecks")
FLAVORS = (KUEUE_GROUP, KUEUE_VERSION, "resourceflavors")


def register_admission(registry: kopf.OperatorRegistry, metrics: OperatorMetrics) -> None:
    @kopf.index(*WORKLOADS, registry=registry, id="fabricfit_kueue_workloads")
    def fabricfit_kueue_workloads(body: kopf.Body, **_: Any) -> Any:
        return workloadevents.workload_entry(body)

    @kopf.index(*CHECKS, registry=registry, id="fabricfit_admission_checks")
    def fabricfit_admission_checks(name: str, body: kopf.Body, **_: Any) -> Any:
        return {name: True} if is_ours(body) else None

    @kopf.index(*FLAVORS, registry=registry, id="fabricfit_flavors")
    def fabricfit_flavors(name: str, body: kopf.Body, **_: Any) -> Any:
        return {name: {"spec": dict(body.get("spec") or {})}}

    @kopf.on.event(*WORKLOADS, registry=registry, id="admission")
    async def workload_event(body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
        if kwargs.get("type") == "DELETED":
            return
        with timed(metrics, "admission"):
            result = await workloadevents.on_workload_event(
                body, memo["state"], views_of(kwargs, memo)
            )
        report(memo, result)

    @kopf.on.event(*CHECKS, registry=registry, id="admission_check")
    async def admission_check_event(body: kopf.Body, memo: kopf.Memo, **kwargs: Any) -> None:
        if kwargs.get("type") != "DELETED":
            await workloadevents.activate(body, memo["state"])
