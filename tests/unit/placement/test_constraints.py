"""Hard node constraints and pod-template parsing."""

from __future__ import annotations

import pytest

from fabricfit.api.models import Parallelism, TrainingTopologySpec
from fabricfit.fabric.topology import Taint
from fabricfit.placement.constraints import eligible_nodes, node_rejection, tolerates
from fabricfit.placement.request import (
    PlacementRequest,
    Toleration,
    parse_required_affinity,
    request_from_spec,
)
from unit.placement.clusters import make_cluster

TEMPLATE = {
    "metadata": {"labels": {"app": "x"}},
    "spec": {
        "nodeSelector": {"pool": "train"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["2"]}]},
                        {"matchExpressions": [{"key": "special", "operator": "Exists"}]},
                    ]
                }
            }
        },
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [],
    },
}


def _request(**kwargs: object) -> PlacementRequest:
    spec = TrainingTopologySpec.model_validate(
        {"gpusPerPod": 8, "parallelism": {"tensor": 8, "data": 2}}
    )
    return request_from_spec(spec, kwargs.get("template", TEMPLATE))  # type: ignore[arg-type]


def test_request_from_spec_reads_pod_template() -> None:
    request = _request()
    assert dict(request.node_selector) == {"pool": "train"}
    assert len(request.affinity) == 2
    assert request.tolerations == (Toleration(key="gpu", operator="Exists", effect="NoSchedule"),)
    assert request.tensor_required and not request.data_required


def test_bare_pod_spec_accepted() -> None:
    request = _request(template={"nodeSelector": {"a": "b"}, "containers": []})
    assert dict(request.node_selector) == {"a": "b"}


def test_unknown_operator_is_one_clear_error() -> None:
    bad = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Near"}]}]
            }
        }
    }
    with pytest.raises(ValueError, match="unknown node-affinity operator 'Near'"):
        parse_required_affinity(bad)


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"pool": "train", "gen": "3"}, None),
        ({"pool": "train", "special": ""}, None),
        ({"pool": "train", "gen": "2"}, "required node affinity not matched"),
        ({"pool": "infer", "gen": "3"}, "nodeSelector pool=train not matched"),
        ({"gen": "3"}, "nodeSelector pool=train not matched"),
    ],
)
def test_selector_and_affinity(labels: dict[str, str], expected: str | None) -> None:
    snapshot = make_cluster(
        rail_groups_per_spine=1, nodes_per_rail_group=1, labels={"n000": labels}
    )
    assert node_rejection(snapshot.nodes[0], _request(), {}) == expected


@pytest.mark.parametrize(
    ("operator", "values", "labels", "ok"),
    [
        ("In", ["a", "b"], {"k": "a"}, True),
        ("In", ["a"], {}, False),
        ("NotIn", ["a"], {"k": "c"}, True),
        ("NotIn", ["a"], {}, True),
        ("NotIn", ["a"], {"k": "a"}, False),
        ("DoesNotExist", [], {}, True),
        ("DoesNotExist", [], {"k": "x"}, False),
        ("Lt", ["5"], {"k": "4"}, True),
        ("Lt", ["5"], {"k": "x"}, False),
    ],
)
def test_affinity_operators(
    operator: str, values: list[str], labels: dict[str, str], ok: bool
) -> None:
    template = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "k", "operator": operator, "values": values}]}
                    ]
                }
            }
        }
    }
    snapshot = make_cluster(
        rail_groups_per_spine=1, nodes_per_rail_group=1, labels={"n000": labels}
    )
    assert (node_rejection(snapshot.nodes[0], _request(template=template), {}) is None) == ok


def test_taints_need_tolerations() -> None:
    taint = Taint(key="gpu", value="h100", effect="NoSchedule")
    soft = Taint(key="x", value="", effect="PreferNoSchedule")
    snapshot = make_cluster(
        rail_groups_per_spine=1, nodes_per_rail_group=2, taints={"n000": (taint,), "n001": (soft,)}
    )
    plain = _request(template={})
    assert node_rejection(snapshot.nodes[0], plain, {}) == "untolerated taint gpu:NoSchedule"
    assert node_rejection(snapshot.nodes[1], plain, {}) is None
    assert tolerates((Toleration(key="gpu", value="h100"),), taint)
    assert not tolerates((Toleration(key="gpu", value="a100"),), taint)
    assert tolerates((Toleration(operator="Exists"),), taint)
    assert not tolerates((Toleration(key="gpu", operator="Exists", effect="NoExecute"),), taint)


def test_free_gpus_reservations_and_availability() -> None:
    snapshot = make_cluster(
        rail_groups_per_spine=1, nodes_per_rail_group=4, used={"n001": 4}, unavailable=("n002",)
    )
    request = PlacementRequest(parallelism=Parallelism(tensor=8, data=4), gpus_per_pod=8)
    nodes, rejected = eligible_nodes(snapshot, request, {"n003": 1})
    assert [n.name for n in nodes] == ["n000"]
    assert rejected["fewer than 8 free GPUs"] == 2
    assert rejected["unavailable (NotReady)"] == 1
