"""Whether a served model's communication alone exceeds its latency targets (pure).

Theory of operation
-------------------
``spec.serving.targets`` states a time per output token (TPOT) and a time to first token
(TTFT). Communication is only part of either (compute, queueing and sampling are not
modelled), so a target the predicted communication already exceeds cannot be met by any
amount of faster compute on this placement — that is what the ``LatencyTarget`` condition
says. Each target is compared with the phases the role's pods run:

* TPOT with one decode step (``decode_token_comm_seconds``: a replica or a decode role);
* TTFT with a prefill plus the KV-cache transfer (``prefill_comm_seconds`` +
  ``kv_transfer_seconds``: a replica or prefill role, and the decode role of a pair, whose
  placement decides the transfer's share).

A target whose phases the role does not run is not compared; with none compared there is no
verdict (no condition). ``fabricfit plan`` and the operator read the same verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricfit.api.conditions import Reason
from fabricfit.api.serving import ServingTargets
from fabricfit.render.summary import format_seconds as _duration


@dataclass(frozen=True, slots=True)
class LatencyVerdict:
    """The ``LatencyTarget`` condition's reason and message."""

    reason: Reason
    message: str

    @property
    def met(self) -> bool:
        return self.reason is Reason.COMMUNICATION_WITHIN_TARGET


@dataclass(frozen=True, slots=True)
class _Check:
    target: str
    phases: str
    predicted_seconds: float
    target_seconds: float

    @property
    def exceeded(self) -> bool:
        return self.predicted_seconds > self.target_seconds

    def words(self) -> str:
        sign = ">" if self.exceeded else "<="
        return (
            f"{self.target}: {self.phases} {_duration(self.predicted_seconds)} {sign} "
            f"target {_duration(self.target_seconds)}"
        )


def latency_verdict(
    targets: ServingTargets | None,
    decode_token_seconds: float | None,
    prefill_seconds: float | None,
    kv_transfer_seconds: float | None,
) -> LatencyVerdict | None:
    """The verdict on ``targets`` for the predicted phases (None where a phase does not run);
    None when no target applies (module docstring)."""
    checks = _checks(targets, decode_token_seconds, prefill_seconds, kv_transfer_seconds)
    if not checks:
        return None
    exceeded = [c for c in checks if c.exceeded]
    if exceeded:
        return LatencyVerdict(
            Reason.COMMUNICATION_EXCEEDS_TARGET,
            "communication alone exceeds the latency target ("
            + "; ".join(c.words() for c in exceeded)
            + "): no compute speed meets it on this placement",
        )
    return LatencyVerdict(
        Reason.COMMUNICATION_WITHIN_TARGET,
        "communication fits the latency targets (" + "; ".join(c.words() for c in checks) + ")",
    )


def _checks(
    targets: ServingTargets | None,
    decode: float | None,
    prefill: float | None,
    kv: float | None,
) -> list[_Check]:
    if targets is None:
        return []
    checks: list[_Check] = []
    tpot = targets.time_per_output_token_seconds
    if tpot is not None and decode is not None:
        checks.append(_Check("time per output token", "a decode step", decode, tpot))
    ttft = targets.time_to_first_token_seconds
    if ttft is not None and (prefill is not None or kv is not None):
        phases = " + ".join(
            name for name, value in (("prefill", prefill), ("KV transfer", kv)) if value is not None
        )
        checks.append(_Check("time to first token", phases, (prefill or 0.0) + (kv or 0.0), ttft))
    return checks
