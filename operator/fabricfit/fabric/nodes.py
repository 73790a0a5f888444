"""Per-node facts from a plain Node dict: name, labels, GPUs, rails, availability, taints (pure).

Theory of operation
-------------------
Everything here looks at one Node object and nothing else; fabric tiers come later, from the
label scheme. A node is *available* when its Ready condition is True and it is not cordoned
(``spec.unschedulable``) or tainted for maintenance (``fabricfit.dev/maintenance``); either of
the last two also puts it *in maintenance*, which drains it from running plans. Other taints are
recorded, not judged: whether a NoSchedule/NoExecute taint blocks a workload depends on that
workload's tolerations, which only the placement engine knows.
Every malformed field becomes a :class:`Diagnostic` and a conservative default (0 GPUs, not
Ready), never an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabricfit.api.constants import GPU_RESOURCE, LABEL_FABRIC, LABEL_RAILS, MAINTENANCE_TAINT
from fabricfit.fabric.objects import list_at, mapping_at, shorten, str_at, value_at
from fabricfit.fabric.quantity import parse_gpu_count, parse_quantity
from fabricfit.fabric.schemes.base import is_label_value
from fabricfit.fabric.topology import Diagnostic, Taint

CORDONED = "cordoned"
MAINTENANCE = f"maintenance (taint {MAINTENANCE_TAINT})"
TAINT_EFFECTS = frozenset({"NoSchedule", "PreferNoSchedule", "NoExecute"})
MAX_RAILS_PER_NODE = 64  # far above any NIC count shipped (DGX: 8 compute + 2 storage NICs)

# The per-node diagnostic sink: (message, severity="warning"). "error" marks input that could not
# be used at all (the node loses its GPUs); "warning" marks a label ignored or a default applied.
_Report = Callable[..., None]


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What one Node object says about itself, already validated."""

    name: str
    labels: Mapping[str, str]
    gpus: int
    rails: int
    fabric: str | None
    available: bool
    unavailable_reason: str | None
    taints: tuple[Taint, ...]
    dra: bool = False  # GPUs from DRA ResourceSlices, not from nvidia.com/gpu allocatable
    maintenance: bool = False  # cordoned or tainted for maintenance


def read_node_facts(
    raw: object,
    index: int,
    default_fabric: str | None,
    diagnostics: list[Diagnostic],
    dra_gpus: Mapping[str, int] | None = None,
) -> NodeFacts | None:
    """Facts of ``raw`` (item ``index`` of the input), or None when it has no usable name.

    A node without ``nvidia.com/gpu`` allocatable takes its GPUs from ``dra_gpus`` (whole GPUs
    DRA ResourceSlices publish for it, by node name); one with both counts the allocatable."""
    name = str_at(raw, "metadata", "name")
    if not name:
        what = "is not an object" if not isinstance(raw, Mapping) else "has no metadata.name"
        message = f"node {what}; skipped"
        diagnostics.append(Diagnostic(node=f"nodes[{index}]", message=message, severity="error"))
        return None

    def report(message: str, severity: str = "warning") -> None:
        diagnostics.append(Diagnostic(node=name, message=message, severity=severity))

    labels = _read_labels(raw, report)
    gpus, problem = parse_gpu_count(mapping_at(raw, "status", "allocatable").get(GPU_RESOURCE))
    if problem:
        report(
            f"allocatable {GPU_RESOURCE}: {problem}; treating the node as having 0 GPUs", "error"
        )
    published = (dra_gpus or {}).get(name, 0)
    dra = gpus == 0 and published > 0 and not problem
    if dra:
        gpus = published
    elif gpus and published:
        report(
            f"has {gpus} {GPU_RESOURCE} allocatable and {published} GPUs in DRA ResourceSlices; "
            f"counting the {GPU_RESOURCE} allocatable"
        )
    reasons = _unavailable_reasons(raw, report)
    taints = _read_taints(raw, report)
    tainted = any(t.key == MAINTENANCE_TAINT for t in taints)
    if tainted:
        reasons.append(MAINTENANCE)
    return NodeFacts(
        name=name,
        labels=labels,
        gpus=gpus,
        rails=_read_rails(labels, gpus, report),
        fabric=_read_fabric(labels, default_fabric, report),
        available=not reasons,
        unavailable_reason=", ".join(reasons) if reasons else None,
        taints=taints,
        dra=dra,
        maintenance=tainted or CORDONED in reasons,
    )


def _read_labels(raw: object, report: _Report) -> Mapping[str, str]:
    labels: dict[str, str] = {}
    for key, value in mapping_at(raw, "metadata", "labels").items():
        if isinstance(key, str) and isinstance(value, str):
            labels[key] = value
        elif isinstance(key, str) and isinstance(value, int) and not isinstance(value, bool):
            labels[key] = str(value)  # an unquoted number in hand-written YAML
        else:
            report(f"label {shorten(key)}: value {shorten(value)} is not a string; ignored")
    return MappingProxyType(dict(sorted(labels.items())))


def _read_rails(labels: Mapping[str, str], gpus: int, report: _Report) -> int:
    """NICs on the node from the rails label; one rail per GPU when absent or unusable."""
    text = labels.get(LABEL_RAILS)
    if text is None:
        return gpus
    value = parse_quantity(text)
    if value is None or value != value.to_integral_value() or not 1 <= value <= MAX_RAILS_PER_NODE:
        report(
            f"label {LABEL_RAILS}={shorten(text)} is not a whole number in "
            f"1..{MAX_RAILS_PER_NODE}; assuming one rail per GPU ({gpus})"
        )
        return gpus
    return int(value)


def _read_fabric(labels: Mapping[str, str], default: str | None, report: _Report) -> str | None:
    text = labels.get(LABEL_FABRIC)
    if text is None or text == "":
        return default
    if not is_label_value(text):
        report(
            f"label {LABEL_FABRIC}={shorten(text)} is not a valid label value; using the default"
        )
        return default
    return text


def _unavailable_reasons(raw: object, report: _Report) -> list[str]:
    reasons: list[str] = []
    ready = [c for c in list_at(raw, "status", "conditions") if str_at(c, "type") == "Ready"]
    status = str_at(ready[-1], "status") if ready else None
    if not ready:
        reasons.append("NotReady (no Ready condition)")
    elif status == "Unknown":
        reasons.append("NotReady (node status Unknown)")
    elif status != "True":
        reasons.append("NotReady")
    unschedulable = value_at(raw, "spec", "unschedulable")
    if unschedulable is True:
        reasons.append(CORDONED)
    elif unschedulable not in (None, False):
        report(
            f"spec.unschedulable={shorten(unschedulable)} is not a boolean; treating as cordoned"
        )
        reasons.append(CORDONED)
    return reasons


def _read_taints(raw: object, report: _Report) -> tuple[Taint, ...]:
    taints: list[Taint] = []
    for item in list_at(raw, "spec", "taints"):
        key, effect = str_at(item, "key"), str_at(item, "effect")
        value = value_at(item, "value") if isinstance(item, Mapping) else None
        if not key or effect not in TAINT_EFFECTS or not isinstance(value, str | None):
            report(f"taint {_taint_text(item)} is malformed; ignored")
            continue
        taints.append(Taint(key=key, value=value or "", effect=effect))
    return tuple(taints)


def _taint_text(item: object) -> str:
    """A malformed taint for a message: its key and effect when it has them, else its kind."""
    if not isinstance(item, Mapping):
        return shorten(item)
    return f"{shorten(item.get('key'))}:{shorten(item.get('effect'))}"
