"""The LatencyTarget verdict: each target against the phases the role runs."""

from __future__ import annotations

import pytest

from fabricfit.api.conditions import Reason
from fabricfit.api.serving import ServingTargets
from fabricfit.policy.latency import latency_verdict

BOTH = ServingTargets(time_per_output_token_seconds=0.005, time_to_first_token_seconds=0.050)


def test_no_targets_no_verdict() -> None:
    assert latency_verdict(None, 1.0, 1.0, None) is None


def test_a_target_whose_phases_the_role_does_not_run_gives_no_verdict() -> None:
    tpot_only = ServingTargets(time_per_output_token_seconds=0.001)
    assert latency_verdict(tpot_only, None, 0.5, 0.1) is None  # a prefill role


def test_within_every_target() -> None:
    verdict = latency_verdict(BOTH, 0.004, 0.030, None)
    assert verdict is not None and verdict.met
    assert verdict.reason is Reason.COMMUNICATION_WITHIN_TARGET
    assert "a decode step 4 ms <= target 5 ms" in verdict.message
    assert "prefill 30 ms <= target 50 ms" in verdict.message


@pytest.mark.parametrize(
    ("decode", "prefill", "kv", "named"),
    [
        (0.006, 0.030, None, "time per output token: a decode step 6 ms > target 5 ms"),
        (0.004, 0.030, 0.025, "time to first token: prefill + KV transfer 55 ms > target 50 ms"),
        (0.004, None, 0.060, "time to first token: KV transfer 60 ms > target 50 ms"),
    ],
)
def test_exceeding_a_target_names_it(
    decode: float, prefill: float | None, kv: float | None, named: str
) -> None:
    verdict = latency_verdict(BOTH, decode, prefill, kv)
    assert verdict is not None and not verdict.met
    assert verdict.reason is Reason.COMMUNICATION_EXCEEDS_TARGET
    assert named in verdict.message
    assert verdict.reason.severity == "Warning"
