"""The shared spec → request policy: rules before search, template choice, bounded messages."""

from __future__ import annotations

import re
from typing import Any

import pytest

from fabricfit.policy import admit, parse_spec, rank_template, workload_problems

JOB_REF = {"apiVersion": "batch/v1", "kind": "Job", "name": "train"}
BASE: dict[str, Any] = {"workloadRef": JOB_REF, "gpusPerPod": 8, "parallelism": {"tensor": 8}}
PYTHON_NAMES = re.compile(
    r"NoneType|\bint\b|\bstr\b|\bdict\b|\btuple\b|instance of|Policy|ModelShape"
)


def spec(**fields: Any) -> dict[str, Any]:
    return {**BASE, **fields}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (spec(gpusPerPod=-8), "spec.gpusPerPod: must be at least 1, got -8"),
        (spec(gpusPerPod="x" * 5000), "spec.gpusPerPod: must be a whole number, got 'xxxxxxx"),
        (spec(gpusPerPod=10**4000), "got a number of about 4000 digits"),
        (spec(placement=5), "spec.placement: must be a mapping, got 5"),
        (spec(placement=None), "spec.placement: must be a mapping, got null"),
        (spec(model=[1, 2]), "spec.model: must be a mapping, got a list"),
        (spec(placement={"mode": "yolo"}), "spec.placement.mode: must be one of 'pinned'"),
        (spec(fabric="A" * 70), "spec.fabric: must have at most 63 characters"),
        (spec(**{"k" * 500: 1}), "kkkk...: is not a field of a TrainingTopology spec"),
        (spec(parallelism={"tensor": None}), "spec.parallelism.tensor: must be a whole number"),
        (spec(workloadRef={"kind": "Job"}), "spec.workloadRef.apiVersion: is required"),
        (spec(rankOrder="tp-tp-tp-tp-tp"), "rankOrder must name each of tp, cp, ep, dp, pp"),
    ],
)
def test_schema_errors_name_the_field_in_document_words(raw: object, message: str) -> None:
    parsed, problems = parse_spec(raw)
    assert parsed is None and len(problems) == 1
    assert message in problems[0], problems[0]
    assert not PYTHON_NAMES.search(problems[0]), problems[0]
    assert len(problems[0]) < 200


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (spec(parallelism={"tensor": 3}), "= 3 is not a multiple of gpusPerPod 8"),
        (spec(parallelism={"tensor": 8, "data": 4096, "pipeline": 8}), "at most 4096 pods"),
        (spec(parallelism={"tensor": 8, "data": 3, "expert": 2}), "expert must divide"),
        (spec(parallelism={"tensor": 4}, gpusPerPod=4, model={"layers": 1}), None),
        (spec(parallelism={"tensor": 2, "data": 2}, gpusPerPod=4, model={"layers": 2}), None),
        ({"gpusPerPod": 8, "parallelism": {"tensor": 8}}, "workloadRef is required"),
    ],
)
def test_crd_rules_apply_before_any_search(raw: dict[str, Any], fragment: str | None) -> None:
    parsed, problems = parse_spec(raw)
    assert parsed is not None
    if fragment is None:
        assert problems == ()
    else:
        assert any(fragment in p for p in problems), problems


def test_layout_checks_follow_only_once_the_crd_rules_hold() -> None:
    _, problems = parse_spec(spec(parallelism={"tensor": 3}))
    assert len(problems) == 1  # not the layout's restatement of the same rule
    _, problems = parse_spec(spec(parallelism={"tensor": 3, "data": 8}))
    assert problems == (
        "a tensor-parallel group of 3 GPUs would split pods of 8 GPUs: tensor must divide "
        "gpusPerPod or be a multiple of it",
    )


def test_only_an_offline_plan_may_leave_out_the_workload() -> None:
    bare = {"gpusPerPod": 8, "parallelism": {"tensor": 8}}
    assert parse_spec(bare, require_workload=False)[1] == ()
    assert admit(bare, None, require_workload=False).request is not None
    assert "workloadRef is required" in admit(bare, None).message


def job(template: Any = None, completions: int = 1) -> dict[str, Any]:
    pod = template if template is not None else {"spec": {"nodeSelector": {"pool": "a"}}}
    body = {"completionMode": "Indexed", "completions": completions, "template": pod}
    return {"kind": "Job", "metadata": {"name": "train"}, "spec": body}


def test_the_template_choice_is_the_last_template_or_the_first_pod() -> None:
    def template(pool: str) -> dict[str, Any]:
        return {"spec": {"nodeSelector": {"pool": pool}}}

    jobset = {
        "spec": {
            "replicatedJobs": [
                {"template": {"spec": {"template": template("driver")}}},
                {"template": {"spec": {"template": template("workers")}}},
            ]
        }
    }
    pytorch = {
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"template": template("master")},
                "Worker": {"template": template("workers")},
            }
        }
    }
    lws = {
        "spec": {
            "leaderWorkerTemplate": {
                "leaderTemplate": template("leader"),
                "workerTemplate": template("workers"),
            }
        }
    }
    pods = {"items": [template("first"), template("second")]}
    for kind, workload, pool in [
        ("Job", job(template("workers")), "workers"),
        ("JobSet", jobset, "workers"),
        ("PyTorchJob", pytorch, "workers"),
        ("LeaderWorkerSet", lws, "workers"),
        ("Pod", pods, "first"),
    ]:
        chosen = rank_template(kind, workload)
        assert chosen is not None and chosen["spec"]["nodeSelector"] == {"pool": pool}, kind
    assert rank_template("Job", None) is None


@pytest.mark.parametrize(
    ("workload", "fragment"),
    [
        (job(completions=2), "Job train runs 2 pods but the spec needs 1"),
        (
            {"kind": "Job", "metadata": {"name": "train"}, "spec": {"template": 7}},
            "no pod template",
        ),
        ({"kind": "Job", "metadata": {"name": "train"}, "spec": 7}, "no pod template"),
    ],
)
def test_workload_problems(workload: dict[str, Any], fragment: str) -> None:
    parsed, _ = parse_spec(BASE)
    assert parsed is not None
    (problem,) = workload_problems(parsed, workload)
    assert fragment in problem


@pytest.mark.parametrize(
    ("pod_spec", "fragment"),
    [
        (7, "pod template: spec is a number, not a mapping"),
        ({"nodeSelector": [1]}, "nodeSelector is a list, not a mapping"),
        (
            {"nodeSelector": {"pool": {"a": 1}}},
            "nodeSelector['pool'] must be a string, got a mapping",
        ),
        ({"tolerations": [{"key": "k", "value": ["x"] * 10**6}]}, "must be a string, got a list"),
        ({"tolerations": "x"}, "tolerations is a string, not a list"),
        ({"tolerations": [{"operator": "Maybe" * 100}]}, "unknown toleration operator 'MaybeMaybe"),
    ],
)
def test_malformed_templates_are_problems_with_bounded_text(pod_spec: Any, fragment: str) -> None:
    admission = admit(BASE, job({"spec": pod_spec}))
    assert admission.request is None
    assert fragment in admission.message and len(admission.message) < 200


def test_admit_builds_the_request_from_the_chosen_template() -> None:
    admission = admit(BASE, job())
    assert admission.problems == ()
    assert admission.request is not None and dict(admission.request.node_selector) == {"pool": "a"}


@pytest.mark.parametrize("value", [True, False, "8", " 8"])
def test_integers_are_not_coerced_from_booleans_or_strings(value: object) -> None:
    """The API server refuses them for an integer field; pydantic's lax mode would not."""
    parsed, problems = parse_spec(spec(gpusPerPod=value))
    assert parsed is None and "spec.gpusPerPod: must be a whole number, got" in problems[0]
    parsed, problems = parse_spec(spec(parallelism={"tensor": value}))
    assert parsed is None and "spec.parallelism.tensor: must be a whole number" in problems[0]


def test_an_integral_float_stays_accepted_as_the_api_server_accepts_it() -> None:
    parsed, problems = parse_spec(spec(gpusPerPod=8.0))
    assert parsed is not None and parsed.gpus_per_pod == 8 and problems == ()


def cluster_with_fabrics(*fabrics: str | None) -> Any:
    from fabricfit.fabric.snapshot import build_snapshot

    label = "topology.fabricfit.dev/fabric"
    nodes = [
        {"kind": "Node", "metadata": {"name": f"n{i}", "labels": {label: f} if f else {}}}
        for i, f in enumerate(fabrics)
    ]
    return build_snapshot(nodes, default_fabric="dgx-h100")


def test_choose_fabric_follows_override_spec_labels_default() -> None:
    from fabricfit.policy import choose_fabric

    parsed, _ = parse_spec(BASE)
    assert parsed is not None
    with_spec = parsed.model_copy(update={"fabric": "dgx-b200"})
    labelled = cluster_with_fabrics("dgx-a100", "dgx-a100", None)
    override = ("dgx-h200", "--fabric")
    assert choose_fabric(parsed, labelled, "dgx-h100", override=override)[0].name == "dgx-h200"
    assert choose_fabric(with_spec, labelled, "dgx-h100")[0].name == "dgx-b200"
    assert choose_fabric(parsed, labelled, "dgx-h100")[0].name == "dgx-a100"  # 2 votes to 1
    assert choose_fabric(parsed, cluster_with_fabrics(), "dgx-h100")[0].name == "dgx-h100"


def test_an_unknown_fabric_label_names_the_node_and_the_label() -> None:
    from fabricfit.fabric.profiles import ProfileError
    from fabricfit.policy import choose_fabric

    parsed, _ = parse_spec(BASE)
    assert parsed is not None
    profile, why = choose_fabric(
        parsed, cluster_with_fabrics("dgx-a1OO", "dgx-a1OO", "dgx-a100"), "x"
    )
    assert profile.name == "dgx-a100"
    assert "topology.fabricfit.dev/fabric='dgx-a1OO' on node n0" in why
    with pytest.raises(
        ProfileError, match=r"node n0: label topology\.fabricfit\.dev/fabric='typo' names no"
    ):
        choose_fabric(parsed, cluster_with_fabrics("typo", "typo"), "typo")
    with pytest.raises(ProfileError, match=r"^spec\.fabric: unknown fabric profile 'nope'"):
        choose_fabric(parsed.model_copy(update={"fabric": "nope"}), cluster_with_fabrics(), "x")


def test_a_label_scheme_the_registry_lacks_is_refused_with_the_names() -> None:
    spec, problems = parse_spec({**BASE, "labelScheme": "azure"})
    assert spec is None
    (problem,) = problems
    assert problem.startswith("spec.labelScheme: must be one of 'auto', 'native'")
    assert problem.endswith("got 'azure'")
    assert parse_spec({**BASE, "labelScheme": "gke"})[1] == ()


def test_a_served_models_leaderworkerset_groups_must_be_its_replicas() -> None:
    ref = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "s"}
    raw = {
        "workloadRef": ref,
        "gpusPerPod": 8,
        "parallelism": {"tensor": 8, "pipeline": 2, "data": 2},
        "rankOrder": "tp-cp-ep-pp-dp",
        "serving": {"decodeBatch": 8, "promptTokens": 512},
    }
    template = {"spec": {"containers": [{"name": "c"}]}}

    def lws(size: int, replicas: int) -> dict[str, Any]:
        return {"spec": {"replicas": replicas, "leaderWorkerTemplate": {
            "size": size, "workerTemplate": template}}}  # fmt: skip

    parsed, _ = parse_spec(raw)
    assert parsed is not None
    assert workload_problems(parsed, lws(2, 2)) == ()
    (problem,) = workload_problems(parsed, lws(1, 4))
    assert "groups 1 pods but a replica spans 2" in problem
    training, _ = parse_spec({k: v for k, v in raw.items() if k != "serving"})
    assert training is not None and workload_problems(training, lws(1, 4)) == ()


def test_admission_check_mode_is_refused_for_kinds_kueue_admits_by_their_pods() -> None:
    for kind in ("Deployment", "StatefulSet"):
        raw = {
            "workloadRef": {"apiVersion": "apps/v1", "kind": kind, "name": "chat"},
            "gpusPerPod": 8,
            "parallelism": {"tensor": 8},
            "placement": {"mode": "admission-check"},
        }
        parsed, _ = parse_spec(raw)
        assert parsed is not None
        (problem,) = workload_problems(parsed, None)
        assert f"not available for a {kind}" in problem
        pinned, _ = parse_spec({**raw, "placement": {"mode": "pinned"}})
        assert pinned is not None and workload_problems(pinned, None) == ()


def test_only_the_nodes_a_job_may_use_vote_for_its_fabric() -> None:
    """A GB200 majority elsewhere does not price a job whose nodeSelector keeps it on H100s."""
    from fabricfit.fabric.snapshot import build_snapshot
    from fabricfit.placement import request_from_spec
    from fabricfit.policy import choose_fabric

    parsed, _ = parse_spec(BASE)
    assert parsed is not None
    nodes = [
        {"kind": "Node", "metadata": {"name": f"n{i}", "labels": {
            "topology.fabricfit.dev/fabric": fabric, "pool": pool}},
         "status": {"allocatable": {"nvidia.com/gpu": "4"},
                    "conditions": [{"type": "Ready", "status": "True"}]}}
        for i, (fabric, pool) in enumerate(
            [("gb200-nvl72", "racks")] * 3 + [("dgx-h100", "hgx")] * 2
        )
    ]  # fmt: skip
    snapshot = build_snapshot(nodes, default_fabric="dgx-h100")
    template = {"spec": {"nodeSelector": {"pool": "hgx"}, "containers": [{"name": "c"}]}}
    request = request_from_spec(parsed, template)
    assert choose_fabric(parsed, snapshot, "x")[0].name == "gb200-nvl72"  # the whole cluster
    profile, why = choose_fabric(parsed, snapshot, "x", request=request)
    assert profile.name == "dgx-h100" and "2" in why
    nowhere = request_from_spec(parsed, {"spec": {"nodeSelector": {"pool": "none"}}})
    assert choose_fabric(parsed, snapshot, "x", request=nowhere)[0].name == "gb200-nvl72"
