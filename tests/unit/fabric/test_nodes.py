"""Per-node facts: availability, taints, rails, fabric and labels, with diagnostics for garbage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fabricfit.fabric.nodes import NodeFacts, read_node_facts
from fabricfit.fabric.topology import Diagnostic, Taint

NodeFactory = Callable[..., dict[str, Any]]  # the `node` fixture of conftest.py


def facts_of(raw: object, default_fabric: str | None = None) -> tuple[NodeFacts | None, list[str]]:
    diagnostics: list[Diagnostic] = []
    facts = read_node_facts(raw, 0, default_fabric, diagnostics)
    return facts, [d.message for d in diagnostics]


@pytest.mark.parametrize(
    ("kwargs", "available", "reason"),
    [
        ({}, True, None),
        ({"ready": "False"}, False, "NotReady"),
        ({"ready": "Unknown"}, False, "NotReady (node status Unknown)"),
        ({"ready": None}, False, "NotReady (no Ready condition)"),
        ({"unschedulable": True}, False, "cordoned"),
        ({"unschedulable": False}, True, None),
        ({"ready": "False", "unschedulable": True}, False, "NotReady, cordoned"),
        # Taints do not decide availability: tolerations are the placement engine's business.
        ({"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]}, True, None),
    ],
)
def test_availability(
    node: NodeFactory, kwargs: dict[str, Any], available: bool, reason: str | None
) -> None:
    facts, problems = facts_of(node("n1", **kwargs))
    assert facts is not None
    assert (facts.available, facts.unavailable_reason) == (available, reason)
    assert problems == []


MAINTENANCE = "maintenance (taint fabricfit.dev/maintenance)"


@pytest.mark.parametrize(
    ("kwargs", "maintenance", "reason"),
    [
        ({}, False, None),
        ({"unschedulable": True}, True, "cordoned"),
        ({"ready": "False"}, False, "NotReady"),
        ({"ready": "False", "unschedulable": True}, True, "NotReady, cordoned"),
        ({"taints": [{"key": "fabricfit.dev/maintenance", "effect": "NoSchedule"}]}, True,
         MAINTENANCE),
        ({"taints": [{"key": "fabricfit.dev/maintenance", "value": "bios", "effect": "NoExecute"}]},
         True, MAINTENANCE),
        ({"unschedulable": True, "taints": [{"key": "fabricfit.dev/maintenance",
          "effect": "PreferNoSchedule"}]}, True, f"cordoned, {MAINTENANCE}"),
        ({"taints": [{"key": "fabricfit.dev/other", "effect": "NoSchedule"}]}, False, None),
    ],
)  # fmt: skip
def test_cordon_and_the_maintenance_taint_put_a_node_in_maintenance(
    node: NodeFactory, kwargs: dict[str, Any], maintenance: bool, reason: str | None
) -> None:
    facts, problems = facts_of(node("n1", **kwargs))
    assert facts is not None and problems == []
    assert (facts.maintenance, facts.unavailable_reason) == (maintenance, reason)
    assert facts.available is (reason is None)


def test_non_boolean_unschedulable_is_reported_and_cordons(node: NodeFactory) -> None:
    facts, problems = facts_of(node("n1", unschedulable="yes"))
    assert facts is not None and facts.unavailable_reason == "cordoned"
    assert len(problems) == 1


def test_taints_are_recorded_and_malformed_ones_reported(node: NodeFactory) -> None:
    taints = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "x"},
        {"key": "spot", "effect": "PreferNoSchedule"},
        {"key": "bad", "effect": "Sometimes"},
        {"effect": "NoSchedule"},
        "garbage",
    ]
    facts, problems = facts_of(node("n1", taints=taints))
    assert facts is not None
    assert facts.taints == (
        Taint("nvidia.com/gpu", "present", "NoSchedule"),
        Taint("node.kubernetes.io/unreachable", "", "NoExecute"),
        Taint("spot", "", "PreferNoSchedule"),
    )
    assert len(problems) == 3


@pytest.mark.parametrize(
    ("gpus", "expected", "problem"),
    [
        ("8", 8, False),
        ("4", 4, False),
        (None, 0, False),
        ("-8", 0, True),
        ("7.5", 0, True),
        ("x", 0, True),
    ],
)
def test_gpus_from_allocatable(node: NodeFactory, gpus: Any, expected: int, problem: bool) -> None:
    facts, problems = facts_of(node("n1", gpus=gpus))
    assert facts is not None and facts.gpus == expected
    assert bool(problems) is problem


@pytest.mark.parametrize(
    ("rails", "gpus", "expected", "problem"),
    [
        (None, "8", 8, False),
        ("4", "8", 4, False),
        ("8", "4", 8, False),
        ("abc", "8", 8, True),
        ("0", "8", 8, True),
        ("1.5", "8", 8, True),
        ("65", "8", 8, True),
        (None, "0", 0, False),
    ],
)
def test_rails_default_to_gpus(
    node: NodeFactory, rails: str | None, gpus: str, expected: int, problem: bool
) -> None:
    labels = {} if rails is None else {"topology.fabricfit.dev/rails": rails}
    facts, problems = facts_of(node("n1", labels, gpus=gpus))
    assert facts is not None and facts.rails == expected
    assert bool(problems) is problem


@pytest.mark.parametrize(
    ("label", "default", "expected", "problem"),
    [
        (None, None, None, False),
        (None, "dgx-h100", "dgx-h100", False),
        ("gb200-nvl72", "dgx-h100", "gb200-nvl72", False),
        ("my custom!", "dgx-h100", "dgx-h100", True),
    ],
)
def test_fabric_label_or_default(
    node: NodeFactory, label: str | None, default: str | None, expected: str | None, problem: bool
) -> None:
    labels = {} if label is None else {"topology.fabricfit.dev/fabric": label}
    facts, problems = facts_of(node("n1", labels), default)
    assert facts is not None and facts.fabric == expected
    assert bool(problems) is problem


def test_labels_are_a_read_only_string_mapping(node: NodeFactory) -> None:
    facts, problems = facts_of(
        node("n1", {"b": "2", "a": "1", "rack": 7, "bad": ["x"], "flag": True})
    )
    assert facts is not None
    assert dict(facts.labels) == {"a": "1", "b": "2", "rack": "7"}
    assert list(facts.labels) == ["a", "b", "rack"]
    with pytest.raises(TypeError):
        facts.labels["a"] = "x"  # type: ignore[index]
    assert len(problems) == 2


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "node",
        3,
        [],
        {},
        {"metadata": None},
        {"metadata": {"name": ""}},
        {"metadata": {"name": 5}},
    ],
)
def test_nameless_nodes_are_skipped_with_a_diagnostic(raw: object) -> None:
    diagnostics: list[Diagnostic] = []
    assert read_node_facts(raw, 4, None, diagnostics) is None
    assert [d.node for d in diagnostics] == ["nodes[4]"]
    assert "skipped" in diagnostics[0].message


def test_severity_marks_unusable_input_as_error(node: NodeFactory) -> None:
    diagnostics: list[Diagnostic] = []
    read_node_facts(node("n1", gpus="lots"), 0, None, diagnostics)
    read_node_facts(node("n2", {"topology.fabricfit.dev/rails": "x"}), 1, None, diagnostics)
    read_node_facts({}, 2, None, diagnostics)
    assert [(d.node, d.severity) for d in diagnostics] == [
        ("n1", "error"),
        ("n2", "warning"),
        ("nodes[2]", "error"),
    ]


def test_diagnostics_echo_bounded_values_even_of_shared_huge_structures(
    node: NodeFactory,
) -> None:
    """An alias bomb shares one list many times: echoing it with repr() once took gigabytes."""
    shared: list[Any] = ["lol"] * 10
    for _ in range(8):
        shared = [shared] * 10  # 10^9 values if written out
    raw = node("n0", {"a": shared, "topology.fabricfit.dev/rails": "9" * 10_000})
    raw["spec"] = {"taints": [{"key": "k" * 10_000, "effect": shared}], "unschedulable": shared}
    diagnostics: list[Diagnostic] = []
    read_node_facts(raw, 0, None, diagnostics)
    messages = [d.message for d in diagnostics]
    assert len(messages) == 4 and all(len(m) < 200 for m in messages), messages
    assert any("value a list is not a string" in m for m in messages)
