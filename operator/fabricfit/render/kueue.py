"""Kueue TAS pod-set annotations chosen from a placement plan, and each scheme's tier keys (pure).

Theory of operation
-------------------
In ``kueue-tas`` mode Kueue places the pods; fabricfit's plan is a witness that tells which
Kueue constraints are satisfiable right now (Kueue's topology-aware scheduling docs and its
``pkg/cache/tas`` domain matching):

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
* A plan that spans rail groups (the required tier is the spine, or there is none) also gets an
  outer slice layer at the rail group: the largest aligned block of consecutive pods the plan
  keeps in one rail group. With a TP slice as well, both go into one multi-layer
  ``podset-slice-required-topology-constraints`` list (rail group outside, NVLink domain
  inside), else the single-layer pair carries it.
* Two PodSets of one workload, one of them a single pod (LeaderWorkerSet leader and workers,
  PyTorchJob master and workers, a JobSet driver and its workers) get a common
  ``podset-group-name`` so Kueue puts the leader in the workers' domain
  (:func:`group_podsets`).

The keys are the node label keys of the cluster's label scheme (:func:`tier_label_keys`); the
caller should pass only keys that are levels of the Kueue ``Topology`` the flavor uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from fabricfit.api.constants import (
    HOSTNAME_LABEL,
    KUEUE_PODSET_GROUP,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_CONSTRAINTS,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
)
from fabricfit.fabric.schemes import LabelScheme, resolve
from fabricfit.fabric.schemes.eks import EKS_LAYERS
from fabricfit.fabric.schemes.native import NATIVE

#: Tiers, finest first; a tier's domain is qualified by every tier after it.
TIERS_FINEST_FIRST: Final = ("hostname", "nvlink_domain", "rack", "rail_group", "spine")
#: Kueue accepts one to three slice layers.
MAX_SLICE_LAYERS: Final = 3
#: The annotation keys that ask for slices (single- or multi-layer).
SLICE_KEYS: Final = (KUEUE_SLICE_REQUIRED_TOPOLOGY, KUEUE_SLICE_SIZE, KUEUE_SLICE_CONSTRAINTS)
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
    pods: Sequence[str],
    *,
    tensor_groups: Sequence[Sequence[int]],
    gpus_per_pod: int,
    tensor: int,
    tier_keys: Mapping[str, str],
    node_labels: Mapping[str, Mapping[str, str]],
) -> dict[str, str]:
    """Kueue pod-set annotations for the plan ``pods`` (node per pod index; see the module doc).

    ``tensor_groups`` are the layout's tensor-parallel rank groups; ``node_labels`` maps each
    planned node to its labels. No plan (``pods`` empty) only gets the preferred topology.
    """
    nodes = sorted(set(pods))
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
        size = _slice_size(
            pods,
            tensor_groups,
            gpus_per_pod=gpus_per_pod,
            tensor=tensor,
            tier_keys=tier_keys,
            node_labels=node_labels,
        )
        layers = [] if size is None else [(tier_keys["nvlink_domain"], size)]
        if required in (None, "spine"):
            layers = _rail_group_layer(pods, size, tier_keys, node_labels) + layers
        annotations.update(slice_annotations(layers))
    return annotations


def slice_annotations(layers: Sequence[tuple[str, int]]) -> dict[str, str]:
    """Kueue's slice keys for ``layers`` (level key, pods per slice), outer layer first: the
    single-layer pair for one layer (what every Kueue with slices reads), the multi-layer JSON
    list for two or three."""
    if not layers:
        return {}
    if len(layers) == 1:
        ((level, size),) = layers
        return {KUEUE_SLICE_REQUIRED_TOPOLOGY: level, KUEUE_SLICE_SIZE: str(size)}
    listed = [{"topology": level, "size": size} for level, size in layers[:MAX_SLICE_LAYERS]]
    return {KUEUE_SLICE_CONSTRAINTS: json.dumps(listed, separators=(",", ":"))}


def slice_layers(annotations: Mapping[str, str]) -> list[tuple[str, int]] | None:
    """The slice layers ``annotations`` ask for, outer first ([] for none); None if malformed."""
    if KUEUE_SLICE_CONSTRAINTS in annotations:
        try:
            raw = json.loads(annotations[KUEUE_SLICE_CONSTRAINTS])
        except ValueError:
            return None
        if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_SLICE_LAYERS:
            return None
        items = [i if isinstance(i, dict) else {} for i in raw]
        layers = [(i.get("topology"), i.get("size")) for i in items]
        valid = all(isinstance(t, str) and t and type(n) is int and n > 0 for t, n in layers)
        return [(str(t), int(str(n))) for t, n in layers] if valid else None
    level = annotations.get(KUEUE_SLICE_REQUIRED_TOPOLOGY)
    if level is None and KUEUE_SLICE_SIZE not in annotations:
        return []
    size = parse_slice_size(annotations.get(KUEUE_SLICE_SIZE))
    return [(level, size)] if level and size is not None else None


def _rail_group_layer(
    pods: Sequence[str],
    inner: int | None,
    tier_keys: Mapping[str, str],
    node_labels: Mapping[str, Mapping[str, str]],
) -> list[tuple[str, int]]:
    """An outer slice layer at the rail group for a plan that spans rail groups: the largest
    block of consecutive pods (a divisor of the pod count, a multiple of the inner TP slice)
    such that the plan keeps every aligned block in one rail group. That is the locality the
    plan was priced with (blocks of a PP stage's data-parallel peers on one leaf's rails),
    which Kueue would otherwise only prefer."""
    total = len(pods)
    if "rail_group" not in tier_keys or total < 4:
        return []
    for block in range(total // 2, 1, -1):
        if total % block or (inner is not None and (block <= inner or block % inner)):
            continue
        chunks = (pods[i : i + block] for i in range(0, total, block))
        if all(_one_domain(chunk, "rail_group", tier_keys, node_labels) for chunk in chunks):
            return [(tier_keys["rail_group"], block)]
    return []


def fit_to_podset(annotations: Mapping[str, str], pod_count: int | None) -> dict[str, str]:
    """``annotations`` for one Kueue PodSet of ``pod_count`` pods (one pod template).

    Kueue validates slices per PodSet: the slice size must not exceed the PodSet's count and
    slices must tile it, so a Master or leader template (one pod) drops the slice request.
    Required/preferred levels stay: a subset of pods fits where the whole plan fits.
    """
    fitted = {k: v for k, v in annotations.items() if k not in SLICE_KEYS}
    layers = slice_layers(annotations) or []
    if pod_count is not None:
        # Inner sizes divide outer ones, so the layers that still tile stay a valid chain.
        layers = [(lvl, n) for lvl, n in layers if n <= pod_count and pod_count % n == 0]
    fitted.update(slice_annotations(layers))
    return fitted


def podset_group_name(topology_name: str) -> str:
    """The ``podset-group-name`` of a TrainingTopology's PodSets (never a bare number, which
    Kueue rejects)."""
    return f"fabricfit-{topology_name}"


def group_podsets(
    per_podset: Sequence[Mapping[str, str]], pod_counts: Sequence[int | None], group: str
) -> list[dict[str, str]]:
    """Per-PodSet annotations, with ``podset-group-name`` = ``group`` on both when Kueue can
    co-locate them: exactly two PodSets, one of them a single pod (a leader or master and its
    workers), each with a required or preferred level and no slices (Kueue 0.19 rejects a
    group with slices, and a TP slice is worth more than the leader's locality). Without it
    Kueue places the two independently, and the leader may land in another domain."""
    fitted = [dict(a) for a in per_podset]
    leveled = all(KUEUE_REQUIRED_TOPOLOGY in a or KUEUE_PREFERRED_TOPOLOGY in a for a in fitted)
    sliced = any(k in a for a in fitted for k in SLICE_KEYS)
    if len(fitted) == 2 and 1 in pod_counts and leveled and not sliced:
        for annotations in fitted:
            annotations[KUEUE_PODSET_GROUP] = group
    return fitted


def parse_slice_size(value: str | None) -> int | None:
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
    pods: Sequence[str],
    groups: Sequence[Sequence[int]],
    *,
    gpus_per_pod: int,
    tensor: int,
    tier_keys: Mapping[str, str],
    node_labels: Mapping[str, Mapping[str, str]],
) -> int | None:
    """Pods per TP group when Kueue slices can express the plan's TP groups, else None."""
    if "nvlink_domain" not in tier_keys or gpus_per_pod <= 0 or tensor <= gpus_per_pod:
        return None
    size, rest = divmod(tensor, gpus_per_pod)
    if rest or not pods or len(pods) % size:
        return None
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
