"""What the API server and the operator say about a spec is what ``fabricfit plan`` says: the
world-size error with its numbers (the CRD's messageExpression, then the operator's Planned
condition once it settles gpusPerPod from the workload), and no snake_case field (the API
server drops it, so ``plan`` refuses it rather than price it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fabricfit_dev.e2e.objects import TT, condition, indexed_job, topology, wait_condition
from fabricfit_dev.operator import OperatorProcess

WORLD_SIZE = (
    "world size tensor·pipeline·data·context = 3·1·1·1 = 3 is not a multiple of gpusPerPod 8: "
    "every pod must carry a full block of ranks"
)


@pytest.mark.usefixtures("operator")  # it applies the CRD
def test_the_api_server_gives_the_world_size_numbers(custom: Any, namespace: str) -> None:
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as rejected:
        custom.create_namespaced_custom_object(
            *TT[:2], namespace, TT[2], topology("odd", "odd", {"tensor": 3})
        )
    assert rejected.value.status == 422
    assert WORLD_SIZE in json.loads(rejected.value.body)["message"]


def test_the_operator_gives_the_same_numbers(
    operator: OperatorProcess, custom: Any, batch: Any, namespace: str
) -> None:
    batch.create_namespaced_job(namespace, indexed_job("odd-job", 1, "odd-pool"))
    body = topology("odd-job", "odd-job", {"tensor": 3})
    del body["spec"]["gpusPerPod"]  # taken from the Job (8), then the rule applies
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], body)
    tt = wait_condition(custom, namespace, "odd-job", "Planned", "False")
    assert condition(tt, "Planned")["message"] == WORLD_SIZE  # type: ignore[index]
    assert operator.alive()


@pytest.mark.usefixtures("operator")
def test_the_api_server_knows_no_snake_case_field(custom: Any, namespace: str) -> None:
    body = topology("snake", "snake", {"tensor": 8}, model={"layers": 8, "hidden_size": 8192})
    custom.create_namespaced_custom_object(*TT[:2], namespace, TT[2], body)
    stored = custom.get_namespaced_custom_object(*TT[:2], namespace, TT[2], "snake")
    model = stored["spec"]["model"]
    # Pruned and defaulted: the cluster prices hiddenSize 4096, never the 8192 written, so plan
    # refuses the key instead of pricing 8192.
    assert "hidden_size" not in model and model["hiddenSize"] == 4096
