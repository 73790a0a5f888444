"""Collective-communication cost model (pure): alpha-beta per algorithm with NCCL's tuning
constants, the bandwidth of the fabric tiers a group crosses, and the training-step model.

Public API (a contract the placement search codes against; extend, don't rename):
:class:`Collective`, :class:`CollectiveEstimate`, :class:`GroupShape`, :func:`summarize_group`,
:func:`estimate_shape`, :func:`estimate_collective`, :func:`estimate_concurrent`,
:class:`StepCommEstimate`, :func:`estimate_step`, :func:`step_lower_bound`, :class:`CostError`.
"""

from fabricfit.cost.collectives import (
    Collective,
    CollectiveEstimate,
    estimate_collective,
    estimate_concurrent,
    estimate_shape,
)
from fabricfit.cost.shape import CostError, GroupShape, summarize_group
from fabricfit.cost.step import StepCommEstimate, estimate_step, step_lower_bound

__all__ = [
    "Collective",
    "CollectiveEstimate",
    "CostError",
    "GroupShape",
    "StepCommEstimate",
    "estimate_collective",
    "estimate_concurrent",
    "estimate_shape",
    "estimate_step",
    "step_lower_bound",
    "summarize_group",
]
