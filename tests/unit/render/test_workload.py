"""Pod-template rendering per mode: expected templates, idempotence, user fields kept; the
JSON merge diff the workload patches are made of."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricfit.api.constants import (
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_QUEUE_LABEL,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    SCHEDULING_GATE,
    TOPOLOGY_LABEL,
)
from fabricfit.render.workload import (
    Mode,
    build_released_template,
    build_template_patch,
    build_workload_labels,
    merge_diff,
    rail_group_affinity_term,
)

RAIL = "topology.fabricfit.dev/rail-group"
USER_TERM = {
    "weight": 10,
    "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"},
}
OUR_TERM = {
    "weight": 100,
    "podAffinityTerm": {
        "labelSelector": {"matchLabels": {TOPOLOGY_LABEL: "llama"}},
        "topologyKey": RAIL,
    },
}
USER_TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "x"}, "annotations": {"note": "keep"}},
    "spec": {
        "containers": [{"name": "trainer", "image": "img", "resources": {"limits": {"gpu": 8}}}],
        "schedulingGates": [{"name": "other/gate"}],
        "affinity": {
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [USER_TERM]},
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}},
        },
        "restartPolicy": "Never",
    },
}


def render(
    mode: Mode,
    template: dict[str, Any],
    queue: str | None = "team-a",
    rail: str | None = RAIL,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    return build_template_patch(
        topology_name="llama",
        mode=mode,
        queue_name=queue,
        rail_group_key=rail,
        kueue_annotations=annotations or {},
        template=template,
    )


def test_pinned_mode_on_a_user_template() -> None:
    assert render("pinned", USER_TEMPLATE) == {
        "metadata": {
            "labels": {"app": "x", TOPOLOGY_LABEL: "llama", KUEUE_QUEUE_LABEL: "team-a"},
            "annotations": {"note": "keep"},
        },
        "spec": {
            "containers": USER_TEMPLATE["spec"]["containers"],
            "schedulingGates": [{"name": "other/gate"}, {"name": SCHEDULING_GATE}],
            "affinity": {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [USER_TERM, OUR_TERM]
                },
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}},
            },
            "restartPolicy": "Never",
        },
    }


def test_pinned_mode_on_an_empty_template_without_queue_or_rail_key() -> None:
    assert render("pinned", {}, queue=None, rail=None) == {
        "metadata": {"labels": {TOPOLOGY_LABEL: "llama"}},
        "spec": {"schedulingGates": [{"name": SCHEDULING_GATE}]},
    }


def test_kueue_tas_mode_sets_annotations_and_drops_stale_managed_keys_and_our_gate() -> None:
    template = {
        "metadata": {
            "annotations": {KUEUE_REQUIRED_TOPOLOGY: "rack", KUEUE_SLICE_SIZE: "2", "note": "k"},
            "labels": None,
        },
        "spec": {"schedulingGates": [{"name": SCHEDULING_GATE}], "affinity": None},
    }
    wanted = {KUEUE_PREFERRED_TOPOLOGY: RAIL}
    assert render("kueue-tas", template, annotations=wanted) == {
        "metadata": {
            "annotations": {"note": "k", KUEUE_PREFERRED_TOPOLOGY: RAIL},
            "labels": {TOPOLOGY_LABEL: "llama", KUEUE_QUEUE_LABEL: "team-a"},
        },
        "spec": {
            "affinity": {
                "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [OUR_TERM]}
            }
        },
    }


def test_kueue_tas_mode_with_slices() -> None:
    wanted = {
        KUEUE_REQUIRED_TOPOLOGY: "spine",
        KUEUE_SLICE_REQUIRED_TOPOLOGY: "nvl",
        KUEUE_SLICE_SIZE: "2",
    }
    rendered = render("kueue-tas", {"spec": {}}, queue=None, rail=None, annotations=wanted)
    assert rendered == {
        "metadata": {"labels": {TOPOLOGY_LABEL: "llama"}, "annotations": wanted},
        "spec": {},
    }


def test_our_affinity_term_is_replaced_not_duplicated_when_the_key_changes() -> None:
    once = render("pinned", USER_TEMPLATE)
    moved = render("pinned", once, rail="fabric.topograph.run/tier-0")
    terms = moved["spec"]["affinity"]["podAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms == [USER_TERM, rail_group_affinity_term("llama", "fabric.topograph.run/tier-0")]


def test_advisory_is_an_unchanged_copy() -> None:
    rendered = render("advisory", USER_TEMPLATE)
    assert rendered == USER_TEMPLATE
    rendered["metadata"]["labels"]["new"] = "x"
    assert "new" not in USER_TEMPLATE["metadata"]["labels"]


def test_workload_labels() -> None:
    assert build_workload_labels("team-a") == {KUEUE_QUEUE_LABEL: "team-a"}
    assert build_workload_labels(None) == {}
    assert build_workload_labels("") == {}


# --- invariants ---------------------------------------------------------------------------

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
json_values = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
gates = st.lists(
    st.sampled_from(
        [{"name": "a/b"}, {"name": SCHEDULING_GATE}, {"name": "kueue.x-k8s.io/topology"}]
    ),
    max_size=3,
)
terms = st.lists(st.sampled_from([USER_TERM, OUR_TERM]), max_size=3)
templates = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {},
            optional={
                "labels": st.dictionaries(
                    st.sampled_from(["app", TOPOLOGY_LABEL]), st.text(max_size=3)
                ),
                "annotations": st.dictionaries(
                    st.sampled_from(["note", KUEUE_REQUIRED_TOPOLOGY, KUEUE_SLICE_SIZE]),
                    st.text(max_size=3),
                ),
                "name": st.text(max_size=3),
            },
        ),
        "spec": st.fixed_dictionaries(
            {},
            optional={
                "schedulingGates": gates,
                "affinity": st.fixed_dictionaries(
                    {},
                    optional={
                        "podAffinity": st.fixed_dictionaries(
                            {"preferredDuringSchedulingIgnoredDuringExecution": terms}
                        ),
                        "nodeAntiAffinity": json_values,
                    },
                ),
                "containers": json_values,
                "tolerations": json_values,
            },
        ),
    },
)
modes = st.sampled_from(["pinned", "kueue-tas", "advisory"])
kueue_sets = st.sampled_from(
    [{}, {KUEUE_PREFERRED_TOPOLOGY: RAIL}, {KUEUE_REQUIRED_TOPOLOGY: RAIL, KUEUE_SLICE_SIZE: "2"}]
)
queues = st.sampled_from([None, "team-a"])
rails = st.sampled_from([None, RAIL])


@given(templates, modes, queues, rails, kueue_sets)
def test_rendering_is_idempotent(
    template: dict[str, Any], mode: Mode, queue: str | None, rail: str | None, ann: dict[str, str]
) -> None:
    once = render(mode, template, queue, rail, ann)
    assert render(mode, once, queue, rail, ann) == once


@given(templates, modes, queues, rails, kueue_sets)
def test_rendering_keeps_user_fields(
    template: dict[str, Any], mode: Mode, queue: str | None, rail: str | None, ann: dict[str, str]
) -> None:
    original = copy.deepcopy(template)
    rendered = render(mode, template, queue, rail, ann)
    assert template == original  # input untouched
    if mode == "advisory":
        assert rendered == template
        return
    user_spec = template.get("spec", {})
    for key in ("containers", "tolerations"):
        if key in user_spec:
            assert rendered["spec"][key] == user_spec[key]
    for gate in user_spec.get("schedulingGates", []):
        if gate["name"] != SCHEDULING_GATE:
            assert gate in rendered["spec"]["schedulingGates"]
    gates_now = rendered["spec"].get("schedulingGates", [])
    assert gates_now.count({"name": SCHEDULING_GATE}) == (1 if mode == "pinned" else 0)
    meta = template.get("metadata", {})
    for key, value in meta.get("labels", {}).items():
        if key != TOPOLOGY_LABEL:
            assert rendered["metadata"]["labels"][key] == value
    if "note" in meta.get("annotations", {}):
        assert rendered["metadata"]["annotations"]["note"] == meta["annotations"]["note"]
    if "name" in meta:
        assert rendered["metadata"]["name"] == meta["name"]
    affinity = user_spec.get("affinity", {})
    if "nodeAntiAffinity" in affinity:
        assert rendered["spec"]["affinity"]["nodeAntiAffinity"] == affinity["nodeAntiAffinity"]
    user_terms = affinity.get("podAffinity", {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution", []
    )
    if rail is not None:
        new_terms = rendered["spec"]["affinity"]["podAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        assert new_terms.count(OUR_TERM) == 1
        assert [t for t in new_terms if t != OUR_TERM] == [t for t in user_terms if t != OUR_TERM]


@pytest.mark.parametrize("mode", ["pinned", "kueue-tas"])
def test_topology_label_overrides_a_stale_value(mode: Mode) -> None:
    rendered = render(mode, {"metadata": {"labels": {TOPOLOGY_LABEL: "old"}}})
    assert rendered["metadata"]["labels"][TOPOLOGY_LABEL] == "llama"


def test_duplicate_gates_of_ours_collapse_to_the_first() -> None:
    template = {"spec": {"schedulingGates": [{"name": "a/b"}, {"name": SCHEDULING_GATE}] * 2}}
    assert render("pinned", template, rail=None)["spec"]["schedulingGates"] == [
        {"name": "a/b"},
        {"name": SCHEDULING_GATE},
        {"name": "a/b"},
    ]
    assert render("kueue-tas", template, rail=None)["spec"]["schedulingGates"] == [
        {"name": "a/b"},
        {"name": "a/b"},
    ]


@pytest.mark.parametrize(
    ("old", "new", "diff"),
    [
        ({"a": 1}, {"a": 1}, {}),
        ({"a": 1, "b": 2}, {"a": 1}, {"b": None}),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1, "y": 3}}, {"a": {"y": 3}}),
        ({"a": [1, 2]}, {"a": [1]}, {"a": [1]}),
        ({"a": 1}, {"a": {"x": 1}}, {"a": {"x": 1}}),
        (None, {"a": 1}, {"a": 1}),
    ],
)
def test_merge_diff(old: Any, new: Any, diff: Any) -> None:
    assert merge_diff(old, new) == diff


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386 apply, to check merge_diff round-trips."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


json_objects = st.recursive(
    st.dictionaries(
        st.sampled_from("abc"), st.integers(0, 3) | st.lists(st.integers(0, 2), max_size=2)
    ),
    lambda inner: st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=10,
)


@given(json_objects, json_objects)
def test_merge_diff_round_trips(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert _merge(old, merge_diff(old, new)) == new


def test_a_released_template_loses_only_our_gate() -> None:
    rendered = build_template_patch(
        topology_name="job",
        mode="pinned",
        queue_name=None,
        rail_group_key=RAIL,
        kueue_annotations={},
        template={"spec": {"schedulingGates": [{"name": "example.com/quota"}]}},
    )
    released = build_released_template(rendered)
    assert released["spec"]["schedulingGates"] == [{"name": "example.com/quota"}]
    assert released["metadata"] == rendered["metadata"]  # the label stays
    assert released["spec"]["affinity"] == rendered["spec"]["affinity"]  # preferred only
    alone = build_template_patch(
        topology_name="job",
        mode="pinned",
        queue_name=None,
        rail_group_key=None,
        kueue_annotations={},
        template={"spec": {}},
    )
    assert "schedulingGates" not in build_released_template(alone)["spec"]
    assert build_released_template(released) == released
