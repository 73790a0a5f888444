"""Hostile input against the real API server with the operator running (hypothesis).

TrainingTopology specs of every shape (wrong types, out-of-range and huge numbers, missing
fields, unicode, contradictory parallelism) are posted to the API server: what its schema
rejects must be a 4xx (422 for a well-formed object that breaks the schema); everything it
accepts must end, within a bound, in a condition that says what happened. Node labels and GPU
counts of every shape the API server accepts go onto fake nodes. Throughout, the operator must
not crash, must log no traceback, and must still place a valid job afterwards. The number of
inputs tried is printed. ``make test`` posts a short run of specs (the same path and checks);
the full run is marked ``slow`` (``make test-slow``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricfit.api.models import TrainingTopologySpec
from fabricfit.api.rules import violations
from fabricfit_dev.e2e.objects import (
    TT,
    condition,
    indexed_job,
    make_pool,
    topology,
    wait_condition,
)
from fabricfit_dev.operator import OperatorProcess
from fabricfit_dev.waiting import wait_for

FABRICFIT_REASONS = {
    "Planned",
    "InvalidSpec",
    "UnsupportedWorkload",
    "InsufficientGPUs",
    "WorkloadNotFound",
}
#: Spec examples of the short run (make test) and of the full one (make test-slow).
SPEC_EXAMPLES = (
    pytest.param(25, id="short"),
    pytest.param(100, id="full", marks=pytest.mark.slow),
)
FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def mostly(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """Mostly ``valid``: with many fields, one hostile field per spec is what gets past the
    schema's first complaint (hostile on a middle value: hypothesis favours range bounds)."""
    return st.integers(0, 19).flatmap(lambda i: hostile if i in (6, 13) else valid)


text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", "😀", "ünïcödé", "a" * 300, "-1", "1e400", "null", "\u202e"]),
)
number = st.one_of(
    st.integers(-3, 70),
    st.sampled_from([0, -1, 2**31, 2**53 + 1, 2**63 - 1, 10**15 + 1, 65537]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
)
scalar: st.SearchStrategy[Any] = st.one_of(number, text, st.booleans(), st.none())
junk = st.recursive(
    scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)),
    max_leaves=5,
)


def dim(*valid: int) -> Any:
    return mostly(st.sampled_from(valid), st.one_of(number, junk))


# The valid core satisfies the CRD's CEL rules (world size a multiple of gpusPerPod, expert
# divides data, a workloadRef); each hostile draw breaks one thing at a time.
spec_strategy = st.fixed_dictionaries(
    {
        "gpusPerPod": dim(8, 4, 1),
        "parallelism": mostly(
            st.fixed_dictionaries(
                {"tensor": dim(8)},
                optional={
                    "pipeline": dim(1, 2),
                    "data": dim(1, 2, 4),
                    "expert": dim(1),
                    "context": dim(1),
                },
            ),
            junk,
        ),
        "workloadRef": mostly(
            st.fixed_dictionaries(
                {
                    "apiVersion": mostly(st.just("batch/v1"), st.sampled_from(["v1", "x/y", ""])),
                    "kind": mostly(st.just("Job"), st.sampled_from(["Pod", "Deployment", ""])),
                    "name": mostly(st.just("nosuchjob"), text),
                }
            ),
            junk,
        ),
    },
    optional={
        "rankOrder": mostly(st.sampled_from(["tp-cp-ep-dp-pp", "pp-dp-ep-cp-tp"]), text),
        "model": mostly(
            st.fixed_dictionaries(
                {},
                optional={
                    "parameters": mostly(st.just(70_000_000_000), number),
                    "hiddenSize": mostly(st.just(8192), number),
                    "layers": dim(1, 80),
                    "experts": dim(0),
                    "topK": dim(0),
                    "zeroStage": mostly(st.integers(0, 3), number),
                },
            ),
            junk,
        ),
        "fabric": mostly(st.sampled_from(["dgx-h100", "gb200-nvl72", "tpu-v5e"]), text),
        "labelScheme": mostly(st.sampled_from(["auto", "native", "gke"]), text),
        "queueName": mostly(st.just("team-a"), text),
        "placement": mostly(
            st.fixed_dictionaries(
                {},
                optional={
                    "mode": st.sampled_from(["pinned", "advisory", "kueue-tas", "yolo"]),
                    "tensor": st.sampled_from(["Required", "Preferred", "Maybe"]),
                },
            ),
            junk,
        ),
        "unknownField": mostly(st.just(1), junk),
    },
)


def model_accepts(spec: dict[str, Any]) -> bool:
    try:
        parsed = TrainingTopologySpec.model_validate(spec)
    except Exception:
        return False
    return not list(violations(parsed))


def clear(tt: dict[str, Any]) -> bool:
    """A condition that says what happened: Planned with one of fabricfit's reasons."""
    planned = condition(tt, "Planned")
    return (
        planned is not None
        and planned["reason"] in FABRICFIT_REASONS
        and bool(planned.get("message"))
        and bool((tt.get("status") or {}).get("summary"))
    )


def log_offset(operator: OperatorProcess) -> int:
    return len(operator.logs())


def new_tracebacks(operator: OperatorProcess, offset: int) -> list[str]:
    lines = operator.logs()[offset:].splitlines()
    return ["\n".join(lines[i : i + 30]) for i, ln in enumerate(lines) if "Traceback" in ln]


@pytest.mark.parametrize("examples", SPEC_EXAMPLES)
def test_fuzzed_specs_are_rejected_or_end_in_a_clear_condition(
    operator: OperatorProcess,
    custom: Any,
    core: Any,
    batch: Any,
    namespace: str,
    tmp_path: Path,
    examples: int,
) -> None:
    from kubernetes.client.exceptions import ApiException

    # Nodes to plan on from the start (whatever ran before): accepted specs get real plans, and
    # a plan whose workload never appears is the path where a stale body once wiped Planned.
    make_pool(core, "fuzzspec", nodes_per_rail_group=8)
    offset = log_offset(operator)
    outcomes: Counter[str] = Counter()
    accepted: list[str] = []
    disagreements: list[Any] = []

    @settings(FUZZ, max_examples=examples)
    @given(spec=spec_strategy)
    def post(spec: dict[str, Any]) -> None:
        name = f"fz-{sum(outcomes.values())}"
        outcomes["tried"] += 1
        body = {"apiVersion": "fabricfit.dev/v1alpha1", "kind": "TrainingTopology",
                "metadata": {"name": name}, "spec": spec}  # fmt: skip
        try:
            custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], body)
        except ApiException as err:
            assert err.status in (400, 422), (err.status, err.body[:300], spec)
            outcomes[f"rejected {err.status}"] += 1
            if model_accepts(spec):
                disagreements.append(("schema rejects what the operator accepts", spec))
            return
        outcomes["accepted"] += 1
        accepted.append(name)

    post()
    print(f"\n[fuzz] TrainingTopology specs: {dict(outcomes)}")
    assert outcomes["accepted"] and sum(v for k, v in outcomes.items() if "rejected" in k)
    assert not disagreements, disagreements[:3]

    def all_clear() -> bool:
        items = custom.list_namespaced_custom_object(*TT[:2], namespace, TT[2])["items"]
        return len(items) == len(accepted) and all(clear(tt) for tt in items)

    try:
        wait_for(all_clear, 120, 0.5, f"{len(accepted)} accepted specs to show a clear condition")
    except AssertionError:
        items = custom.list_namespaced_custom_object(*TT[:2], namespace, TT[2])["items"]
        unclear = [(t["spec"], t.get("status")) for t in items if not clear(t)]
        raise AssertionError(
            f"{len(unclear)} without a clear condition, e.g. {unclear[:2]}"
        ) from None
    items = custom.list_namespaced_custom_object(*TT[:2], namespace, TT[2])["items"]
    reasons = Counter(condition(tt, "Planned")["reason"] for tt in items)  # type: ignore[index]
    print(f"[fuzz] accepted specs ended as: {dict(reasons)}")
    assert operator.alive()
    assert not new_tracebacks(operator, offset), new_tracebacks(operator, offset)[0]

    # Release the fuzzed reservations (specs without a workload plan on any node), then the
    # operator still serves a valid job.
    custom.delete_collection_namespaced_custom_object(*TT[:2], namespace, TT[2])
    wait_for(
        lambda: not custom.list_namespaced_custom_object(*TT[:2], namespace, TT[2])["items"],
        120,
        what="fuzzed TrainingTopologies deleted",
    )
    batch.create_namespaced_job(namespace, indexed_job("valid", 2, "fuzzspec"))
    custom.create_namespaced_custom_object(
        *TT[:2], namespace, TT[2], topology("valid", "valid", {"tensor": 8, "data": 2})
    )
    wait_condition(custom, namespace, "valid", "Placed", "True")
    assert operator.alive()


def test_schema_rejects_the_plainly_invalid_with_422(custom: Any, namespace: str) -> None:
    from kubernetes.client.exceptions import ApiException

    cases = {
        "negative-gpus": {"gpusPerPod": -8, "parallelism": {"tensor": 8}},
        "zero-tensor": {"gpusPerPod": 8, "parallelism": {"tensor": 0}},
        "string-tensor": {"gpusPerPod": 8, "parallelism": {"tensor": "eight"}},
        "huge-data": {"gpusPerPod": 8, "parallelism": {"tensor": 8, "data": 10**12}},
        "bad-mode": {"gpusPerPod": 8, "parallelism": {"tensor": 8}, "placement": {"mode": "x"}},
        "no-parallelism": {"gpusPerPod": 8},
        "bad-rank-order": {"gpusPerPod": 8, "parallelism": {"tensor": 8}, "rankOrder": "tp-tp"},
    }
    for name, spec in cases.items():
        body = {"apiVersion": "fabricfit.dev/v1alpha1", "kind": "TrainingTopology",
                "metadata": {"name": name}, "spec": spec}  # fmt: skip
        try:
            custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], body)
        except ApiException as err:
            assert err.status == 422, (name, err.status, err.body[:300])
            continue
        raise AssertionError(f"{name} was accepted: {spec}")


LABEL_KEYS = [
    "topology.fabricfit.dev/nvlink-domain",
    "topology.fabricfit.dev/rail-group",
    "topology.fabricfit.dev/rack",
    "topology.fabricfit.dev/spine",
    "topology.fabricfit.dev/rails",
    "topology.fabricfit.dev/fabric",
    "nvidia.com/gpu.clique",
    "fabric.topograph.run/tier-0",
    "accelerator.topograph.run/domain",
    "cloud.google.com/gce-topology-block",
    "cloud.google.com/gce-topology-subblock",
    "topology.k8s.aws/network-node-layer-3",
    "oci.oraclecloud.com/rdma.local_block_id",
    "ib.coreweave.cloud/leafgroup",
]
label_value = st.one_of(
    st.sampled_from(["", "0", "-1", "999999999999", "nan", "dgx-h999", "rg-0", "a.b_c-d"]),
    st.from_regex(r"\A[A-Za-z0-9]([A-Za-z0-9._-]{0,20}[A-Za-z0-9])?\Z"),
    st.text(max_size=70),  # mostly rejected by the API server: counted, not required
)
gpu_quantity = st.one_of(
    st.sampled_from(["0", "-8", "8", "1", "1000000", "9223372036854775807", "0.5", "8k", "1e3"]),
    st.integers(-10, 10**9).map(str),
    st.text(max_size=6),
)


def test_fuzzed_node_labels_and_gpu_counts_never_stop_placement(
    operator: OperatorProcess, core: Any, custom: Any, batch: Any, namespace: str
) -> None:
    from kubernetes.client.exceptions import ApiException

    offset = log_offset(operator)
    outcomes: Counter[str] = Counter()
    created: list[str] = []

    @FUZZ
    @given(
        labels=st.dictionaries(st.sampled_from(LABEL_KEYS), label_value, max_size=8),
        gpus=gpu_quantity,
        unschedulable=st.booleans(),
        taint=st.booleans(),
    )
    def post(labels: dict[str, str], gpus: str, unschedulable: bool, taint: bool) -> None:
        name = f"fuzznode-{namespace}-{sum(outcomes.values())}"
        outcomes["tried"] += 1
        resources = {"cpu": "8", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": gpus}
        body = {
            "metadata": {
                "name": name,
                "labels": {**labels, "fabricfit.dev/fake": "true", "fabricfit.dev/pool": "fuzz"},
                "annotations": {"kwok.x-k8s.io/node": "fake"},
            },
            "spec": {
                "unschedulable": unschedulable,
                "taints": [{"key": "fuzz", "value": "x", "effect": "NoSchedule"}] if taint else [],
            },
            "status": {"capacity": resources, "allocatable": resources},
        }
        try:
            core.create_node(body)
        except ApiException as err:
            assert err.status in (400, 422), (err.status, err.body[:300])
            outcomes[f"rejected {err.status}"] += 1
            return
        outcomes["accepted"] += 1
        created.append(name)

    try:
        post()
        print(f"\n[fuzz] node label/GPU sets: {dict(outcomes)}")
        assert outcomes["accepted"] >= 10
        # A job fenced onto the fuzzed nodes ends in a clear condition (placed or why not)...
        batch.create_namespaced_job(namespace, indexed_job("onfuzz", 2, "fuzz"))
        custom.create_namespaced_custom_object(
            *TT[:2], namespace, TT[2], topology("onfuzz", "onfuzz", {"tensor": 8, "data": 2})
        )
        tt = wait_for(
            lambda: (t := custom.get_namespaced_custom_object(
                *TT[:2], namespace, TT[2], "onfuzz")) and clear(t) and t,
            90, what="the job on fuzzed nodes to show a clear condition",
        )  # fmt: skip
        print(f"[fuzz] job on fuzzed nodes: {condition(tt, 'Planned')}")
        # ...and a job on a healthy pool is placed, with every fuzzed node still there.
        make_pool(core, "fuzzok", nodes_per_rail_group=2)
        batch.create_namespaced_job(namespace, indexed_job("valid", 2, "fuzzok"))
        custom.create_namespaced_custom_object(
            *TT[:2], namespace, TT[2], topology("valid", "valid", {"tensor": 8, "data": 2})
        )
        wait_condition(custom, namespace, "valid", "Placed", "True")
        assert operator.alive()
        assert not new_tracebacks(operator, offset), new_tracebacks(operator, offset)[0]
    finally:
        custom.delete_collection_namespaced_custom_object(*TT[:2], namespace, TT[2])
        for name in created:
            try:
                core.delete_node(name)
            except ApiException as err:
                if err.status != 404:
                    raise
