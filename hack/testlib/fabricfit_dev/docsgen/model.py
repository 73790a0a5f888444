"""docs/reference/labels.md and docs/reference/conditions.md, from the package's constants.

Labels: every label scheme's keys per fabric tier (``fabricfit.fabric.schemes.SCHEMES``, the
keys a Kueue Topology level or an affinity's ``topologyKey`` must use), and the node keys and
taint fabricfit reads whatever the scheme. Conditions: every condition reason
(``fabricfit.api.conditions.Reason``) with the condition it sets, its status, the Event it
posts, and whether it means "fix the spec".
"""

from __future__ import annotations

from fabricfit.api import constants
from fabricfit.api.conditions import ConditionType, Reason
from fabricfit.fabric.schemes import PROVIDER_PRECEDENCE, SCHEMES
from fabricfit_dev.docsgen.markdown import code, header, page, table

TIERS = (("spine", "spine"), ("rail_group", "rail group"), ("rack", "rack"),
         ("nvlink_domain", "NVLink domain"))  # fmt: skip
LABELS_INTRO = (
    "The node label keys each label scheme reads, per fabric tier, best first (a scheme "
    "falls back to the next key of a tier when a node lacks the first). `labelScheme: auto` "
    "(the default) picks at most one provider scheme by the precedence "
    + ", ".join(f"`{name}`" for name in PROVIDER_PRECEDENCE)
    + " and lays `native` keys over it wherever a node carries them. How the tiers are used and "
    "what each provider sets: [Fabric tiers and label schemes](../concepts/fabric.md); how to "
    "set them: [Label your nodes](../tasks/label-nodes.md)."
)
CONDITIONS_INTRO = (
    "Every condition reason the operator writes on a TrainingTopology. A reason belongs to one "
    "condition and one status; a Warning reason also posts a Warning Event. Reasons marked "
    "*fix the spec* make the summary `Invalid`; other `Planned=False` reasons make it "
    "`Waiting`. What to do about each Warning: [Troubleshooting](../operations/"
    "troubleshooting.md)."
)


def render_labels_page() -> str:
    lines = header("Node labels", "fabricfit.fabric.schemes and fabricfit.api.constants",
                   LABELS_INTRO)  # fmt: skip
    rows = []
    for name, scheme in SCHEMES.items():
        cells = [", ".join(code(k) for k in scheme.tier_keys.get(t, ())) or "–" for t, _ in TIERS]
        rows.append([code(name), *cells])
    lines += table(["scheme", *(title for _, title in TIERS)], rows)
    lines += ["## Read under every scheme", ""]
    lines += table(
        ["key", "on", "meaning"],
        [
            [code(constants.LABEL_RAILS), "node label",
             "NICs (rails) on the node; default: its GPUs"],
            [code(constants.LABEL_FABRIC), "node label",
             "fabric profile (preset or custom) that prices plans on this node"],
            [code("node.kubernetes.io/instance-type"), "node label",
             "picks a cloud preset when no fabric label names one"],
            [code(constants.MAINTENANCE_TAINT), "node taint",
             "any value and effect: the node is in maintenance, its ranks are re-placed"],
        ],
    )  # fmt: skip
    return page(lines)


def render_conditions_page() -> str:
    lines = header("Conditions and reasons", "fabricfit.api.conditions", CONDITIONS_INTRO)
    for condition in ConditionType:
        rows = [
            [code(r.value), code(r.status), r.severity.value, _means(r)]
            for r in Reason
            if r.condition == condition
        ]
        lines += [f"## `{condition.value}`", ""]
        lines += table(["reason", "status", "Event", "summary"], rows)
    return page(lines)


def _means(reason: Reason) -> str:
    return "Invalid: fix the spec" if reason.invalid else ""
