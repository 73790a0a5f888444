"""Kueue TAS pod-set annotations chosen from a placement plan, and each scheme's tier keys (pure).

Theory of operation
-------------------
In ``kueue-tas`` mode Kueue places the pods; fabricfit's plan is a witness that tells which
Kueue constraints are satisfiable right now (reference/kueue-tas.md §1.3, §2.6):

* ``podset-required-topology`` = the *finest* tier whose one domain holds every planned pod
  (hostname, NVLink domain, rack, rail group, spine, in that order). Kueue compares domains as
  the tuple of a level's value and every level above it, so values here are compared the same
  way (label values are only unique within their parent).
* Otherwise ``podset-preferred-topology`` = the rail-group key (else the finest switch tier
  available): Kueue tries one rail group, then each level above, then spreads.
* Tensor-parallel groups wider than a pod (``tensor > gpusPerPod``) get
  ``podset-slice-required-topology`` = the NVLink-domain key with ``podset-slice-size`` =
  ``tensor // gpusPerPod`` -- only when Kueue's slices (aligned blocks of consecutive pod
  indexes) are exactly the plan's TP groups and the plan keeps each in one NVLink domain, and
  only when the pod set is not already confined to one NVLink domain or node.

The keys are the node label keys of the cluster's label scheme (:func:`tier_label_keys`); the
caller should pass only keys that are levels of the Kueue ``Topology`` the flavor uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from fabricfit.api.constants import (
    HOSTNAME_LABEL,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
)
from fabricfit.fabric.schemes import LabelScheme, resolve
from fabricfit.fabric.schemes.clouds import EKS_LAYERS
from fabricfit.fabric.schemes.native import NATIVE
from fabricfit.placement.decision import PlacementDecision

#: Tiers, finest first; a tier's domain is qualified by every tier after it.
TIERS_FINEST_FIRST: Final = ("hostname", "nvlink_domain", "rack", "rail_group", "spine")
#: Preferred-topology fallback order when no single domain holds the plan.
PREFERRED_ORDER: Final = ("rail_group", "spine", "rack", "nvlink_domain", "hostname")


def tier_label_keys(scheme: str, label_sets: Iterable[Mapping[str, str]] = ()) -> dict[str, str]:
    """Node label key per tier (``rail_group``, ``nvlink_domain``, ``rack``, ``spine``,
    ``hostname``) for ``scheme``; tiers the scheme cannot express are left out.

    ``label_sets`` (the nodes' labels) resolves ``auto`` like :func:`fabric.schemes.resolve`
    and picks, where a scheme has several keys for a tier, the first one any node carries
    (EKS's finest layer, topograph's newest generation); a native key a node carries wins.
    """
    nodes = list(label_sets)
    resolution = resolve(scheme, nodes)
    keys: dict[str, str] = {}
    for tier in TIERS_FINEST_FIRST[1:]:
        with_native = resolution.native or resolution.provider is None
        native = NATIVE.tier_keys.get(tier, ()) if with_native else ()
        provider = _provider_keys(resolution.provider, tier)
        carried = next((k for k in (*native, *provider) if any(k in n for n in nodes)), None)
        # With no nodes to look at, the scheme's own key; with nodes, only keys they carry.
        chosen = carried if nodes else next(iter(provider or native), None)
        if chosen is not None:
            keys[tier] = chosen
    rail_group = keys.get("rail_group")
    if rail_group in EKS_LAYERS:
        # EKS layers are relative: the spine is the layer right above the rail group's.
        above = EKS_LAYERS.index(rail_group) - 1
        if above >= 0:
            keys["spine"] = EKS_LAYERS[above]
        else:
            keys.pop("spine", None)
    keys["hostname"] = HOSTNAME_LABEL
    return keys


def _provider_keys(provider: LabelScheme | None, tier: str) -> tuple[str, ...]:
    return provider.tier_keys.get(tier, ()) if provider is not None else ()


def build_kueue_annotations(
    decision: PlacementDecision,
    *,
    gpus_per_pod: int,
    tensor: int,
    tier_keys: Mapping[str, str],
    node_labels: Mapping[str, Mapping[str, str]],
) -> dict[str, str]:
    """Kueue pod-set annotations for the plan in ``decision`` (see the module docstring).

    ``node_labels`` maps each planned node to its labels. An infeasible decision (no plan)
    only gets the preferred topology.
    """
    nodes = sorted(set(decision.pods)) if decision.feasible else []
    required = next(
        (t for t in TIERS_FINEST_FIRST if _one_domain(nodes, t, tier_keys, node_labels)), None
    )
    annotations: dict[str, str] = {}
    if required is not None:
        annotations[KUEUE_REQUIRED_TOPOLOGY] = tier_keys[required]
    else:
        preferred = next((t for t in PREFERRED_ORDER if t in tier_keys), None)
        if preferred is not None:
            annotations[KUEUE_PREFERRED_TOPOLOGY] = tier_keys[preferred]
    if required not in ("hostname", "nvlink_domain"):
        size = _slice_size(decision, gpus_per_pod, tensor, tier_keys, node_labels)
        if size is not None:
            annotations[KUEUE_SLICE_REQUIRED_TOPOLOGY] = tier_keys["nvlink_domain"]
            annotations[KUEUE_SLICE_SIZE] = str(size)
    return annotations


def fit_to_podset(annotations: Mapping[str, str], pod_count: int | None) -> dict[str, str]:
    """``annotations`` for one Kueue PodSet of ``pod_count`` pods (one pod template).

    Kueue validates slices per PodSet: the slice size must not exceed the PodSet's count and
    slices must tile it, so a Master or leader template (one pod) drops the slice request.
    Required/preferred levels stay: a subset of pods fits where the whole plan fits.
    """
    fitted = dict(annotations)
    if KUEUE_SLICE_SIZE not in fitted and KUEUE_SLICE_REQUIRED_TOPOLOGY not in fitted:
        return fitted
    size = parse_size(fitted.get(KUEUE_SLICE_SIZE))
    fits = pod_count is None or (size is not None and pod_count >= size and pod_count % size == 0)
    if size is None or not fits:
        fitted.pop(KUEUE_SLICE_SIZE, None)
        fitted.pop(KUEUE_SLICE_REQUIRED_TOPOLOGY, None)
    return fitted


def parse_size(value: str | None) -> int | None:
    """A positive decimal annotation value, else None."""
    if value is None or not value.isascii() or not value.isdigit() or int(value) == 0:
        return None
    return int(value)


def _domain(
    node: str, tier: str, tier_keys: Mapping[str, str], node_labels: Mapping[str, Mapping[str, str]]
) -> tuple[str | None, ...] | None:
    """The node's domain at ``tier``: its value there plus every coarser tier's value."""
    labels = node_labels.get(node, {})
    key = tier_keys.get(tier)
    if key is None or labels.get(key) is None:
        return None
    coarser = TIERS_FINEST_FIRST[TIERS_FINEST_FIRST.index(tier) :]
    return tuple(labels.get(tier_keys[t]) if t in tier_keys else None for t in coarser)


def _one_domain(
    nodes: Sequence[str],
    tier: str,
    tier_keys: Mapping[str, str],
    node_labels: Mapping[str, Mapping[str, str]],
) -> bool:
    domains = {_domain(n, tier, tier_keys, node_labels) for n in nodes}
    return len(domains) == 1 and None not in domains


def _slice_size(
    decision: PlacementDecision,
    gpus_per_pod: int,
    tensor: int,
    tier_keys: Mapping[str, str],
    node_labels: Mapping[str, Mapping[str, str]],
) -> int | None:
    """Pods per TP group when Kueue slices can express the plan's TP groups, else None."""
    if "nvlink_domain" not in tier_keys or gpus_per_pod <= 0 or tensor <= gpus_per_pod:
        return None
    size, rest = divmod(tensor, gpus_per_pod)
    pods = decision.pods
    if rest or not decision.feasible or not pods or len(pods) % size:
        return None
    groups = decision.groups.get("tensor", ())
    if not groups:
        return None
    for group in groups:
        first = min(group) // gpus_per_pod
        block = range(first, first + size)
        if first % size or {r // gpus_per_pod for r in group} != set(block):
            return None
        if block.stop > len(pods):
            return None
        if not _one_domain([pods[i] for i in block], "nvlink_domain", tier_keys, node_labels):
            return None
    return size
