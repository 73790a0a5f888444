"""Jobs sharing links: the link load of the running jobs, and the slowdown it causes (pure).

* :mod:`~fabricfit.contention.links` — the shared links (NIC, rail-leaf uplinks, spine-block
  uplinks, each direction) and their capacities on a fabric profile;
* :mod:`~fabricfit.contention.traffic` — the bytes a placed job puts on each link per step and
  the seconds its transfers take, per dimension, from the cost model;
* :mod:`~fabricfit.contention.duty` — how long a step computes (the duty cycle);
* :mod:`~fabricfit.contention.load` — :class:`JobTraffic` and :class:`LinkLoad`, the immutable,
  incremental sum of the running jobs' average loads;
* :mod:`~fabricfit.contention.fairshare` — the max-min fair-share slowdown of a job on the links
  it shares, and the slowdown it adds to the jobs already there.

The placement search prices candidates with it through :mod:`fabricfit.placement.neighbours`.
"""

from fabricfit.contention.duty import compute_seconds_per_step
from fabricfit.contention.fairshare import (
    added_slowdown,
    factors_before,
    gpu_seconds,
    own_slowdown,
    slowdown_factor,
)
from fabricfit.contention.links import (
    DOWN,
    LEAF,
    LINK_CLASSES,
    NIC,
    SPINE,
    UP,
    Link,
    LinkCapacities,
    link_capacities,
)
from fabricfit.contention.load import JobTraffic, LinkLoad, busiest_by_place
from fabricfit.contention.traffic import DimensionTraffic, dimension_traffic, non_blocking

__all__ = [
    "DOWN",
    "LEAF",
    "LINK_CLASSES",
    "NIC",
    "SPINE",
    "UP",
    "DimensionTraffic",
    "JobTraffic",
    "Link",
    "LinkCapacities",
    "LinkLoad",
    "added_slowdown",
    "busiest_by_place",
    "compute_seconds_per_step",
    "dimension_traffic",
    "factors_before",
    "gpu_seconds",
    "link_capacities",
    "non_blocking",
    "own_slowdown",
    "slowdown_factor",
]
