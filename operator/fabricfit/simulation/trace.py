"""Job traces for ``fabricfit simulate``: a list of training jobs arriving over time.

Theory of operation
-------------------
A trace document is a mapping with a ``jobs`` list (YAML or JSON). Each job says when it arrives
and what it is, in the TrainingTopology's own words::

    jobs:
      - name: llama-70b            # optional; job-<index> otherwise
        arrival: 120               # seconds after the start of the trace
        gpusPerPod: 8
        parallelism: {tensor: 8, pipeline: 4, data: 2}
        duration: 3600             # compute seconds: the run time if communication were free
        steps: 1800                # optional: training steps (default: one per compute second)
        model: {parameters: 70000000000, hiddenSize: 8192, layers: 80}   # optional
        rankOrder: tp-cp-ep-dp-pp  # optional

``gpusPerPod``, ``parallelism``, ``model`` and ``rankOrder`` are a TrainingTopology spec, checked
by the one path ``fabricfit plan`` and the operator take (:func:`fabricfit.policy.parse_spec`:
the CRD's schema, its CEL rules, the layout's own checks) and turned into the planner's request
the same way, so a trace job is exactly a job the operator could place — a rank order ``plan``
refuses is refused here, with ``plan``'s words. A job's wall time on a placement is
``duration + steps × predicted step communication``: the cost model's communication is counted
as exposed (none of it overlapped with compute), the same reading ``status.predicted`` has;
``duration ÷ steps`` is the job's compute per step, which sets the duty cycle of its traffic
when the replay prices contention.
Anything wrong is a :class:`TraceError` (a ``ValueError``) naming the job and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from fabricfit.fabric.objects import kind_of, shorten
from fabricfit.placement.request import PlacementRequest, request_from_spec
from fabricfit.policy import parse_spec

MAX_JOBS = 100_000
MAX_SECONDS = 10.0**9  # about 31 years: any larger is a unit mistake
# The fields of a trace job that are a TrainingTopology spec's (validated as one).
SPEC_FIELDS = ("gpusPerPod", "parallelism", "model", "rankOrder")
JOB_FIELDS = frozenset(("name", "arrival", "duration", "steps", *SPEC_FIELDS))


class TraceError(ValueError):
    """The trace document is invalid (one-line message)."""


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of the trace, validated."""

    name: str
    arrival: float
    duration: float
    steps: int
    request: PlacementRequest

    @property
    def gpus(self) -> int:
        return self.request.parallelism.world_size


def parse_trace(document: object) -> tuple[TraceJob, ...]:
    """The jobs of ``document`` (already loaded from YAML/JSON), sorted by arrival then order."""
    if not isinstance(document, Mapping):
        raise TraceError(f"a trace is a mapping with a jobs list, not {kind_of(document)}")
    extra = sorted(str(k) for k in document if k != "jobs")
    if extra:
        raise TraceError(f"unknown top-level field {shorten(extra[0], 40)} (a trace has: jobs)")
    jobs = document.get("jobs")
    if not isinstance(jobs, Sequence) or isinstance(jobs, str | bytes) or not jobs:
        raise TraceError("jobs must be a non-empty list")
    if len(jobs) > MAX_JOBS:
        raise TraceError(f"{len(jobs)} jobs; at most {MAX_JOBS:,}")
    parsed = [_job(index, raw) for index, raw in enumerate(jobs)]
    seen: set[str] = set()
    for job in parsed:
        if job.name in seen:
            raise TraceError(f"job name {shorten(job.name, 60)} appears twice")
        seen.add(job.name)
    order = sorted(range(len(parsed)), key=lambda i: (parsed[i].arrival, i))
    return tuple(parsed[i] for i in order)


def _job(index: int, raw: object) -> TraceJob:
    where = f"job {index}"
    if not isinstance(raw, Mapping):
        raise TraceError(f"{where}: must be a mapping, not {kind_of(raw)}")
    name = raw.get("name", f"job-{index}")
    if not isinstance(name, str) or not name or len(name) > 253:
        raise TraceError(f"{where}: name must be a non-empty string of at most 253 characters")
    where = f"job {index} ({shorten(name, 40)})"
    unknown = sorted(str(k) for k in raw if k not in JOB_FIELDS)
    if unknown:
        raise TraceError(f"{where}: unknown field {shorten(unknown[0], 40)}")
    arrival = _seconds(raw.get("arrival"), f"{where}: arrival", low=0.0)
    duration = _seconds(raw.get("duration"), f"{where}: duration", low=None)
    if "gpusPerPod" not in raw:  # a spec may leave it to the workload; a trace job has none
        raise TraceError(f"{where}: gpusPerPod is required")
    steps_raw = raw.get("steps")
    steps = (
        max(1, round(duration))
        if steps_raw is None
        else _whole(steps_raw, f"{where}: steps", high=10**12)
    )
    if not isinstance(raw.get("parallelism"), Mapping):
        raise TraceError(
            f"{where}: parallelism must be a mapping, not {kind_of(raw.get('parallelism'))}"
        )
    spec = {key: raw[key] for key in SPEC_FIELDS if key in raw}
    checked, problems = parse_spec(spec, require_workload=False)
    if checked is None or problems:
        said = "; ".join(p.removeprefix("spec.").removeprefix("spec: ") for p in problems)
        raise TraceError(f"{where}: {said}")
    request = replace(request_from_spec(checked), compute_seconds_per_step=duration / steps)
    return TraceJob(name=name, arrival=arrival, duration=duration, steps=steps, request=request)


def _seconds(value: object, where: str, *, low: float | None) -> float:
    if value is None:
        raise TraceError(f"{where} is required (seconds)")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TraceError(f"{where} must be a number of seconds, got {shorten(value)}")
    seconds = float(value)
    if (low is None and seconds <= 0) or (low is not None and seconds < low):
        bound = "positive" if low is None else f"at least {low:g}"
        raise TraceError(f"{where} must be {bound}, got {shorten(value)}")
    if seconds > MAX_SECONDS:
        raise TraceError(f"{where} must be at most {MAX_SECONDS:g} s, got {shorten(value)}")
    return seconds


def _whole(value: object, where: str, *, high: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise TraceError(f"{where} must be a whole number from 1 to {high:,}, got {shorten(value)}")
    return value
