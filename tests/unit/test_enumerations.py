"""Every list of label schemes and fabric presets names the same things.

The scheme registry (``fabric.schemes.SCHEMES``) and the preset files are the sources; the API
constants, the spec's ``Literal``, the CLI's choices, the generated CRD and the chart's values
schema each repeat them for their own readers and must not drift. Each scheme's tier keys are
keys the scheme itself reads, so Kueue levels and pod affinities name real node labels.
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from fabricfit.api import models
from fabricfit.api.constants import FABRIC_PRESETS, LABEL_SCHEMES
from fabricfit.cli.common import Parser
from fabricfit.cli.main import SUBCOMMANDS
from fabricfit.fabric.profiles import PRESETS
from fabricfit.fabric.schemes import AUTO, PROVIDER_PRECEDENCE, SCHEMES

ROOT = Path(__file__).resolve().parents[2]
VALUES_SCHEMA = ROOT / "charts" / "fabricfit" / "values.schema.json"
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


def test_label_scheme_names_agree_everywhere() -> None:
    assert set(LABEL_SCHEMES) == {AUTO, *SCHEMES}
    assert LABEL_SCHEMES[0] == AUTO
    assert get_args(models.LabelSchemeName) == LABEL_SCHEMES
    assert set(PROVIDER_PRECEDENCE) == set(SCHEMES) - {"native"}
    choices = cli_choices("label_scheme")
    assert {"run", "plan"} <= set(choices)
    assert all(c == LABEL_SCHEMES for c in choices.values()), choices
    assert values_enum("labelScheme") == LABEL_SCHEMES
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert tuple(spec["properties"]["labelScheme"]["enum"]) == LABEL_SCHEMES


def test_fabric_preset_names_agree_everywhere() -> None:
    assert set(FABRIC_PRESETS) == set(PRESETS)
    for command, choices in cli_choices("fabric").items():
        assert set(choices) == set(FABRIC_PRESETS), command
    chart = values_enum("fabric")
    if chart is not None:  # an open string when the chart also takes custom profiles
        assert set(chart) == set(FABRIC_PRESETS)


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
