"""Placement engine: rank layout, hard constraints, candidate search, scoring plugins.

Public entry points: :func:`plan_placement` (heuristic, any cluster size) and
:func:`exact_optimum` (exhaustive, ≤ 16 nodes, for tests and what-if checks).
"""

from fabricfit.placement.decision import LargestFit, PlacementDecision, RankPlacement, StepTimes
from fabricfit.placement.exact import ExactResult, exact_optimum
from fabricfit.placement.layout import RankLayout, build_layout, validate_layout
from fabricfit.placement.request import PlacementRequest, request_from_spec
from fabricfit.placement.search import plan_placement

__all__ = [
    "ExactResult",
    "LargestFit",
    "PlacementDecision",
    "PlacementRequest",
    "RankLayout",
    "RankPlacement",
    "StepTimes",
    "build_layout",
    "exact_optimum",
    "plan_placement",
    "request_from_spec",
    "validate_layout",
]
