"""A template patch the API server refuses: a condition, one Warning, and no hot retries."""

from __future__ import annotations

import asyncio

import pytest

from fabricfit.api.conditions import ConditionType, Reason, Severity
from fabricfit.kube.rest import ApiError
from fabricfit.reconcile import service
from fabricfit.reconcile.applying import REFUSAL_MESSAGE_CHARS, is_refusal
from fabricfit.reconcile.context import OperatorConfig
from fabricfit.reconcile.service import Outcome
from unit.reconcile.world import JOB_PATH, NAME, NS, World, job, topology

WEBHOOK = (
    'admission webhook "vleaderworkerset.kb.io" denied the request: '
    "spec.leaderWorkerTemplate.workerTemplate.spec.affinity: Invalid value: field is immutable"
)


def reconcile(world: World) -> Outcome:
    return asyncio.run(service.reconcile(world.body(), world.state, world.views))


def placed(outcome: Outcome) -> list[tuple[Reason, str]]:
    return [
        (t.reason, t.message)
        for t in outcome.transitions
        if t.reason.condition is ConditionType.PLACED
    ]


def refusing_world(err: ApiError, resync_seconds: float = 3600.0) -> World:
    world = World(topology(), (JOB_PATH, job()))
    world.state.config = OperatorConfig(resync_seconds=resync_seconds)
    world.api.refuse[JOB_PATH] = err
    return world


@pytest.mark.parametrize(
    "err",
    [
        ApiError(403, "Forbidden", WEBHOOK),
        ApiError(422, "Invalid", "spec.template: field is immutable"),
        ApiError(400, "BadRequest", "unknown field"),
        ApiError(403, "Forbidden", 'ValidatingAdmissionPolicy "p" denied request: no'),
    ],
)
def test_a_refused_patch_sets_a_warning_condition_naming_workload_and_message(
    err: ApiError,
) -> None:
    world = refusing_world(err)
    outcome = reconcile(world)
    ((reason, message),) = placed(outcome)
    assert reason is Reason.WORKLOAD_PATCH_REJECTED and reason.severity is Severity.WARNING
    assert f"Job {NS}/{NAME}" in message and err.message in message and str(err.status) in message
    assert world.condition("Placed") == ("False", "WorkloadPatchRejected")


def test_the_same_refused_patch_is_not_sent_again_before_the_resync() -> None:
    world = refusing_world(ApiError(403, "Forbidden", WEBHOOK))
    reconcile(world)
    tries = len(world.api.writes_to(JOB_PATH))
    writes = len(world.api.writes)
    for _ in range(5):  # pod events, updates: each reconciles again
        again = reconcile(world)
        assert again.transitions == ()  # no new Event either
    assert len(world.api.writes_to(JOB_PATH)) == tries == 1
    assert len(world.api.writes) == writes  # nor a status write
    assert world.condition("Placed") == ("False", "WorkloadPatchRejected")


def test_a_refused_patch_is_retried_after_the_resync_period() -> None:
    world = refusing_world(ApiError(403, "Forbidden", WEBHOOK), resync_seconds=0.0)
    reconcile(world)
    reconcile(world)
    assert len(world.api.writes_to(JOB_PATH)) == 2


def test_a_changed_workload_is_retried_at_once_and_success_clears_the_condition() -> None:
    world = refusing_world(ApiError(403, "Forbidden", WEBHOOK))
    reconcile(world)
    del world.api.refuse[JOB_PATH]
    world.api.objects[JOB_PATH]["metadata"]["generation"] = 2
    outcome = reconcile(world)
    assert len(world.api.writes_to(JOB_PATH)) >= 2
    assert Reason.WORKLOAD_PATCH_REJECTED not in [r for r, _ in placed(outcome)]
    assert world.condition("Placed") != ("False", "WorkloadPatchRejected")
    assert not world.state.refusals


def test_the_server_message_is_bounded() -> None:
    world = refusing_world(ApiError(422, "Invalid", "x" * 100_000))
    ((_reason, message),) = placed(reconcile(world))
    assert REFUSAL_MESSAGE_CHARS <= len(message) < REFUSAL_MESSAGE_CHARS + 200


def test_errors_that_are_not_refusals_are_raised_for_kopf_to_retry() -> None:
    rbac = ApiError(403, "Forbidden", 'jobs.batch "llama" is forbidden: User cannot patch')
    world = refusing_world(rbac)
    with pytest.raises(ApiError):
        reconcile(world)
    assert not is_refusal(rbac)
    assert not is_refusal(ApiError(500, "InternalError", 'failed calling webhook "x"'))
