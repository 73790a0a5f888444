"""What every handler shares: views of kopf's indexes, Event posting, guarded metrics updates."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import kopf

from fabricfit.reconcile.context import KueueViews, Views
from fabricfit.reconcile.dra import DraInventoryWatch
from fabricfit.reconcile.draft import Transition
from fabricfit.reconcile.observe import Observer

Index = Mapping[Any, Any]
Listing = Callable[[], list[Mapping[str, Any]]]
#: kopf index ids; handlers receive each as a keyword argument of that name.
INDEXES = ("fabricfit_pods", "fabricfit_topologies")
logger = logging.getLogger(__name__)


#: The Kueue indexes (registered only when Kueue's API is served, see handlers.admission).
KUEUE_INDEXES = ("fabricfit_kueue_workloads", "fabricfit_admission_checks", "fabricfit_flavors")


def views_from(
    nodes: Listing,
    pods: Index,
    topologies: Index,
    other_pods: Listing | None = None,
    *,
    kueue: tuple[Index, Index, Index] | None = None,
    dra: DraInventoryWatch | None = None,
) -> Callable[[], Views]:
    """A function that copies, at call time, the nodes, kopf's live indexes (our pods and the
    TrainingTopologies), every other bound pod, and the DRA ResourceSlices and ResourceClaims
    when start-up watches them, into plain lists."""

    def take() -> Views:
        listed = [v for store in pods.values() for v in store]
        return Views(
            nodes=nodes(),
            pods=listed + other_pods() if other_pods is not None else listed,
            topologies={k: next(iter(store)) for k, store in topologies.items() if store},
            kueue=KueueViews() if kueue is None else kueue_views(*kueue),
            slices=dra.slices.values() if dra is not None else [],
            claims=dra.claims.values() if dra is not None else [],
        )

    return take


def kueue_views(workloads: Index, checks: Index, flavors: Index) -> KueueViews:
    """The Kueue indexes as plain maps: a job's Workloads, fabricfit's check names, flavors."""
    return KueueViews(
        workloads={k: list(store) for k, store in workloads.items() if store},
        checks=frozenset(k for k, store in checks.items() if store),
        flavors={k: next(iter(store)) for k, store in flavors.items() if store},
    )


def views_of(kwargs: Mapping[str, Any], memo: kopf.Memo) -> Callable[[], Views]:
    """Views of kopf's indexes passed to a handler plus what start-up mirrors itself: the nodes
    (``memo["nodes"]``), the bound pods kopf does not watch (``memo["other_pods"]``) and the
    DRA objects it watches when ``resource.k8s.io`` is served (``memo["dra"]``)."""
    pods, topologies = (kwargs[name] for name in INDEXES)
    nodes, others = memo.get("nodes"), memo.get("other_pods")
    workloads, checks, flavors = (kwargs.get(name) for name in KUEUE_INDEXES)
    kueue = None
    if workloads is not None and checks is not None and flavors is not None:
        kueue = (workloads, checks, flavors)
    extra = others.pods if others is not None else None
    listing = nodes.values if nodes is not None else list
    return views_from(listing, pods, topologies, extra, kueue=kueue, dra=memo.get("dra"))


def post(body: kopf.Body, transitions: tuple[Transition, ...]) -> None:
    """One Event per condition change, of the severity its reason carries."""
    for t in transitions:
        kopf.event(
            body,
            type=t.reason.severity.value,
            reason=t.reason.value,
            message=f"{t.type}={t.status}: {t.message}"[:1024],
        )


def observe(memo: kopf.Memo, what: Callable[[Observer], None]) -> None:
    """Update metrics; a failure there is logged and never fails the handler."""
    try:
        what(memo["observer"])
    except Exception:
        logger.exception("updating metrics failed")
