"""docs/reference/values.md and docs/reference/rbac.md, from charts/fabricfit.

Values: every key ``values.yaml`` documents (a ``# key.path -- text`` comment, continued on the
comment lines that follow), with its default from the same file and its type from
``values.schema.json``. RBAC: the chart rendered by the real helm binary (default values: the
cluster-wide mode; ``ci/namespaced-values.yaml``: the namespaced mode) and every rule of every
ClusterRole and Role with the comment the template writes above it, which says why the operator
needs it.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fabricfit_dev.chart import CHART, helm, kube_version
from fabricfit_dev.docsgen.markdown import cell, code, header, page, table

NAMESPACED = CHART / "ci" / "namespaced-values.yaml"
DOC_COMMENT = re.compile(r"^\s*# ([A-Za-z][\w.]*) -- (.*)$")
VALUES_INTRO = (
    "Every value of the `fabricfit` chart (`charts/fabricfit/values.yaml`, checked by "
    "`values.schema.json`: a value of the wrong type or an unknown key fails `helm install`). "
    "The ones most installs set are explained in [Values that matter](../operations/values.md)."
)
RBAC_INTRO = (
    "What the chart grants, rendered from the chart: no wildcards, no Secrets, no ConfigMaps. "
    "The reason column is the comment the template carries above each rule (a rule without one "
    "shares the comment above it). Which role a person needs: [RBAC](../operations/rbac.md)."
)


@dataclass(frozen=True)
class Role:
    kind: str
    name: str
    namespace: str | None
    aggregate: tuple[str, ...]
    rules: tuple[tuple[Mapping[str, Any], str], ...]  # (rule, why)


# -- values -------------------------------------------------------------------------------


def documented_values() -> list[tuple[str, str]]:
    """(key path, description) of every documented key, in file order."""
    found: list[tuple[str, str]] = []
    lines = (CHART / "values.yaml").read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        match = DOC_COMMENT.match(line)
        if not match:
            continue
        text = [match.group(2)]
        for more in lines[i + 1 :]:
            stripped = more.strip()
            if not stripped.startswith("#") or DOC_COMMENT.match(more):
                break
            text.append(stripped.lstrip("#").strip())
        found.append((match.group(1), " ".join(text)))
    return found


def render_values_page() -> str:
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    rows = [
        [code(key), _schema_type(schema, key), _default(values, key), cell(text)]
        for key, text in documented_values()
    ]
    lines = header("Chart values", "charts/fabricfit/values.yaml and values.schema.json",
                   VALUES_INTRO)  # fmt: skip
    lines += table(["value", "type", "default", "description"], rows)
    return page(lines)


def _lookup(tree: Any, key: str) -> Any:
    for part in key.split("."):
        tree = tree[part]
    return tree


def _default(values: Mapping[str, Any], key: str) -> str:
    value = _lookup(values, key)
    text = json.dumps(value, separators=(", ", ": "))
    return code(text if len(text) <= 80 else text[:77] + "...")


def _schema_type(schema: Mapping[str, Any], key: str) -> str:
    node: Mapping[str, Any] = schema
    for part in key.split("."):
        node = node.get("properties", {}).get(part, {})
    kind = node.get("type", "any")
    kinds = "/".join(kind) if isinstance(kind, list) else str(kind)
    if "enum" in node:
        return kinds + ": " + ", ".join(code(v) for v in node["enum"])
    return kinds


# -- RBAC ---------------------------------------------------------------------------------


def render(values: Path | None, *sets: str) -> str:
    """``helm template`` of the chart, hooks included, as text (comments kept)."""
    argv = [helm(), "template", "fabricfit", str(CHART)]
    argv += ["--namespace", "fabricfit", "--kube-version", kube_version()]
    argv += ["-f", str(values)] if values else []
    for expr in sets:
        argv += ["--set", expr]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def rbac_roles(values: Path | None = None, *sets: str) -> list[Role]:
    """Every ClusterRole and Role the chart renders for ``values``, rules with their reason."""
    return [role for text in _documents(render(values, *sets)) if (role := _role(text))]


def _documents(rendered: str) -> Iterator[str]:
    yield from (d for d in re.split(r"^---\s*$", rendered, flags=re.M) if d.strip())


def _role(text: str) -> Role | None:
    obj = yaml.safe_load(text)
    if not obj or obj.get("kind") not in {"ClusterRole", "Role"}:
        return None
    reasons = _rule_reasons(text)
    rules = tuple(zip(obj.get("rules") or [], reasons, strict=True))
    labels = obj["metadata"].get("labels") or {}
    aggregate = tuple(k.rsplit("aggregate-to-", 1)[1] for k in labels if "aggregate-to-" in k)
    meta = obj["metadata"]
    return Role(obj["kind"], meta["name"], meta.get("namespace"), aggregate, rules)


def _rule_reasons(text: str) -> list[str]:
    """The comment above each ``- apiGroups:`` item under ``rules:`` (carried forward)."""
    reasons: list[str] = []
    comment: list[str] = []
    current = ""
    in_rules = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped == "rules:":
            in_rules = True
        elif in_rules and stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
        elif in_rules and stripped.startswith("- apiGroups:"):
            current = " ".join(comment) if comment else current
            comment = []
            reasons.append(current)
    return reasons


def render_rbac_page() -> str:
    lines = header("RBAC", "charts/fabricfit/templates (rendered by helm)", RBAC_INTRO)
    default = rbac_roles(None)
    lines += ["## Cluster-wide mode (default: `operator.namespaces` empty)", ""]
    lines += _roles_section(default)
    lines += _peering_section(default)
    lines += ["## Namespaced mode (`operator.namespaces: [team-a, team-b]`)", ""]
    lines += [
        "Rendered with `charts/fabricfit/ci/namespaced-values.yaml` (peering on); the user "
        "roles and the uninstall hook's are the same as above.",
        "",
    ]
    namespaced = [r for r in rbac_roles(NAMESPACED) if not r.aggregate]
    lines += _roles_section([r for r in namespaced if not r.name.endswith("-release")])
    return page(lines)


def _peering_section(default: list[Role]) -> list[str]:
    """The rules ``peering.enabled=true`` adds to the cluster-wide ClusterRole."""
    before = {(r.kind, r.name): r for r in default}
    added: list[tuple[Mapping[str, Any], str]] = []
    for role in rbac_roles(None, "peering.enabled=true"):
        known = before.get((role.kind, role.name))
        added += [rule for rule in role.rules if known is None or rule not in known.rules]
    intro = "With `peering.enabled=true` (high availability) the operator's ClusterRole also has:"
    return [intro, "", *_rules_table(added)]


def _roles_section(roles: list[Role]) -> list[str]:
    """One table per role; Roles with the same rules in several namespaces are shown once."""
    lines: list[str] = []
    shown: dict[tuple[str, tuple[Any, ...]], list[str]] = {}
    for role in roles:
        key = (role.name, tuple(json.dumps(r, sort_keys=True) for r, _ in role.rules))
        if role.namespace and key in shown:
            shown[key].append(role.namespace)
            continue
        shown[key] = [role.namespace] if role.namespace else []
    for role in roles:
        key = (role.name, tuple(json.dumps(r, sort_keys=True) for r, _ in role.rules))
        spaces = shown.get(key)
        if spaces is None or (role.namespace and role.namespace != spaces[0]):
            continue
        where = " in " + ", ".join(f"`{n}`" for n in spaces) if spaces else ""
        lines += [f"### {role.kind} `{role.name}`{where}", "", _purpose(role), ""]
        lines += _rules_table(role.rules)
    return lines


def _rules_table(rules: tuple[tuple[Mapping[str, Any], str], ...] | list[Any]) -> list[str]:
    rows = [
        [
            ", ".join(code(g or "core") for g in rule["apiGroups"]),
            ", ".join(code(r) for r in rule["resources"]),
            ", ".join(rule["verbs"]),
            cell(why),
        ]
        for rule, why in rules
    ]
    return table(["API group", "resources", "verbs", "why"], rows)


def _purpose(role: Role) -> str:
    if role.aggregate:
        targets = ", ".join(f"`{a}`" for a in role.aggregate)
        return f"Not bound to anyone: aggregated into the built-in {targets} ClusterRoles."
    if role.name.endswith("-release"):
        return "The uninstall hook's own, deleted with it (`cleanup.enabled`)."
    return "The operator's ServiceAccount."
