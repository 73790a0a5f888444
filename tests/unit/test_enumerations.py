"""The registries are the only lists of label schemes, fabric presets and workload kinds.

The scheme registry (``fabric.schemes``: one module per scheme), the preset files and the
workload-kind registry (``workloads``: one module per kind) are the sources; the CLI's choices
read them, and the generated files (the CRD's enum and kind list, the chart's values-schema
enum and workload RBAC rules) are written from them by ``make crd`` and checked here. Each
scheme's tier keys are keys the scheme itself reads, so Kueue levels and pod affinities name
real node labels.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricfit.cli.common import Parser
from fabricfit.cli.crd import chart_files
from fabricfit.cli.main import SUBCOMMANDS
from fabricfit.fabric.profiles import PRESETS
from fabricfit.fabric.schemes import AUTO, NAMES, PROVIDER_PRECEDENCE, SCHEMES
from fabricfit.workloads import KINDS

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "fabricfit"
VALUES_SCHEMA = CHART / "values.schema.json"
CRD = ROOT / "crds" / "trainingtopologies.fabricfit.dev.yaml"
TIERS = ("spine", "rail_group", "rack", "nvlink_domain")


def cli_choices(dest: str) -> dict[str, tuple[str, ...]]:
    """Per sub-command, the choices of its option stored in ``dest`` (when it restricts them)."""
    found: dict[str, tuple[str, ...]] = {}
    for name in SUBCOMMANDS:
        parser = Parser(prog=name)
        importlib.import_module(f"fabricfit.cli.{name}").configure(parser)
        for action in parser._actions:
            if isinstance(action, argparse.Action) and action.dest == dest and action.choices:
                found[name] = tuple(action.choices)
    return found


def values_enum(field: str) -> tuple[str, ...] | None:
    schema: dict[str, Any] = json.loads(VALUES_SCHEMA.read_text())
    enum = schema["properties"]["operator"]["properties"][field].get("enum")
    return tuple(enum) if enum is not None else None


def test_label_scheme_names_come_from_the_registry() -> None:
    assert (AUTO, *SCHEMES) == NAMES and "native" in SCHEMES
    assert set(PROVIDER_PRECEDENCE) == set(SCHEMES) - {"native"}
    choices = cli_choices("label_scheme")
    assert {"run", "plan"} <= set(choices)
    assert all(c == NAMES for c in choices.values()), choices
    assert values_enum("labelScheme") == NAMES
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert tuple(spec["properties"]["labelScheme"]["enum"]) == NAMES
    kind = spec["properties"]["workloadRef"]["properties"]["kind"]["description"]
    assert all(name in kind for name in KINDS)


def test_queue_policy_names_are_one_list() -> None:
    from typing import get_args

    from fabricfit.api.models import QUEUE_POLICIES, QueuePolicyName
    from fabricfit.placement.waiting import STRICT_FIFO, WAIT_IF_FASTER

    assert get_args(QueuePolicyName) == QUEUE_POLICIES == (STRICT_FIFO, WAIT_IF_FASTER)
    choices = cli_choices("queue_policy")
    assert set(choices) == {"run", "simulate"} and set(choices.values()) == {QUEUE_POLICIES}
    assert values_enum("queuePolicy") == QUEUE_POLICIES
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    placement = spec["properties"]["placement"]["properties"]
    assert tuple(placement["queuePolicy"]["enum"]) == QUEUE_POLICIES


def test_the_chart_files_generated_from_the_registries_are_current() -> None:
    for relative, text in chart_files(CHART).items():
        assert (CHART / relative).read_text(encoding="utf-8") == text, (
            f"charts/fabricfit/{relative} is stale: run `make crd`"
        )


def test_fabric_preset_names_come_from_the_preset_files() -> None:
    for command, choices in cli_choices("fabric").items():
        assert set(choices) == set(PRESETS), command
    chart = values_enum("fabric")
    if chart is not None:  # an open string when the chart also takes custom profiles
        assert set(chart) == set(PRESETS)


@pytest.mark.parametrize("name", sorted(SCHEMES))
def test_tier_keys_are_keys_the_scheme_reads(name: str) -> None:
    scheme = SCHEMES[name]
    assert scheme.tier_keys, f"{name} names no tier keys: kueue-tas would get no levels"
    assert set(scheme.tier_keys) <= set(TIERS)
    best = {tier: keys[0] for tier, keys in scheme.tier_keys.items()}
    labels = {key: f"v{i}" for i, key in enumerate(best.values())}
    tiers = scheme.read(labels).tiers
    for tier, key in best.items():
        # The value shows up in the tier (spines are paths, NVLink domains may be cliques).
        assert labels[key] in (getattr(tiers, tier) or ""), (name, tier, key)
