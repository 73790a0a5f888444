"""Published measurements of jobs sharing links, priced by the planner's own fair-share code.

Theory of operation
-------------------
A validation row (``tests/fixtures/contention/rows.yaml``; sources in the ``SOURCES.md`` next
to it) describes a measured set-up in the terms the planner uses: the shared links with their
class (``nic`` or ``fabric``) and line rate, the rate the measured job pushes on each when
nothing it shares limits it, the rates of the jobs beside it (all running continuously), and
what was measured alone and shared. :func:`predicted_slowdown` turns it into a
:class:`~fabricfit.contention.traffic.DimensionTraffic`, a
:class:`~fabricfit.contention.load.LinkLoad` and :class:`~fabricfit.contention.links.LinkCapacities`
and asks :func:`~fabricfit.contention.fairshare.own_slowdown` — the function that prices a
placement's neighbour slowdown — so the table checks the code that plans, not a copy of it.
The slowdown is the time with neighbours over the time alone: ``(s_alone + lost) / s_alone``
where ``s_alone`` is the job's own saturation of its links and ``lost`` the neighbour seconds
per second of its transfers.

:func:`measured_slowdown` reads the measurement: rates (a time is bytes over rate, so the
slowdown is the ratio of the mean of ``1 / rate``, shared over alone), seconds, or a selection
of the MCCS trials. :func:`fit_efficiencies` fits the two sharing efficiencies of the fabric
profile on the rows marked ``fit`` (each on the rows whose links are all of its class),
minimising the squared log error over a grid of 0.0005 steps; the profile's defaults are those
values, and a unit test fits them again.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabricfit.contention.fairshare import own_slowdown
from fabricfit.contention.links import LEAF, NIC, UP, Link, LinkCapacities
from fabricfit.contention.load import JobTraffic, LinkLoad
from fabricfit.contention.traffic import DimensionTraffic

GBIT = 1e9 / 8  # bytes per second in one Gb/s
CLASSES = {"nic": NIC, "fabric": LEAF}
GRID = tuple(0.5 + 0.0005 * i for i in range(1001))  # efficiencies 0.5 .. 1.0

#: (file suffix, NCCL solution, app) -> bus bandwidths of the runs or trials, GB/s.
Trials = Mapping[tuple[str, str, str], Sequence[float]]


@dataclass(frozen=True)
class Efficiencies:
    nic: float
    fabric: float


def _links(row: Mapping[str, Any]) -> dict[str, tuple[Link, float, str]]:
    """Row link name -> (the planner's link, line rate in bytes/s, class name)."""
    found = {}
    for name, (kind, gbit) in row["links"].items():
        found[name] = (Link(CLASSES[kind], name, 0, UP), float(gbit) * GBIT, kind)
    return found


def _traffic(
    rates: Mapping[str, float], links: Mapping[str, tuple[Link, float, str]]
) -> DimensionTraffic:
    # one second of transfers at these rates: bytes per step = rate, network seconds = 1
    return DimensionTraffic("row", 1.0, {links[n][0]: float(r) * GBIT for n, r in rates.items()})


def predicted_slowdown(row: Mapping[str, Any], efficiencies: Efficiencies) -> float:
    """The model's time with neighbours over its time alone for the row's job."""
    links = _links(row)
    if not links or not row["job"]:
        return 1.0
    nic_lines = {line for _, line, kind in links.values() if kind == "nic"}
    if len(nic_lines) > 1:
        raise ValueError(f"row {row['id']}: NIC ports of one row share one line rate")
    capacities = LinkCapacities(
        nic_bytes_per_s=(nic_lines.pop() if nic_lines else 0.0) * efficiencies.nic,
        leaf_bytes_per_s={
            (link.place, link.rail): line * efficiencies.fabric
            for link, line, kind in links.values()
            if kind == "fabric"
        },
        spine_bytes_per_s={},
        node_leaf_bytes_per_s=0.0,
    )
    load = LinkLoad()
    for index, rates in enumerate(row["neighbours"]):
        dims = (_traffic(rates, links),)
        load = load.add(JobTraffic(key=f"n{index}", gpus=1, step_seconds=1.0, dimensions=dims))
    job = _traffic(row["job"], links)
    alone = max(
        [1.0, *(amount / capacities.of(link) for link, amount in job.bytes_per_step.items())]
    )
    return (alone + own_slowdown(job, load, capacities)) / alone


def _mean_time(rates: Sequence[float]) -> float:
    return sum(1.0 / r for r in rates) / len(rates)


def _select(selection: Sequence[Any], trials: Trials) -> list[float]:
    file, solution, apps = selection
    found = [v for app in apps for v in trials.get((file, solution, app), ())]
    if not found:
        raise ValueError(f"no MCCS trials for {file} {solution} {apps}")
    return found


def measured_slowdown(row: Mapping[str, Any], trials: Trials) -> float:
    """The measured time shared over the time alone (see the module docstring)."""
    measured = row["measured"]
    if "alone_seconds" in measured:
        alone, shared = measured["alone_seconds"], measured["shared_seconds"]
        return float(sum(shared) / len(shared)) / float(sum(alone) / len(alone))
    alone, shared = measured["alone"], measured["shared"]
    if alone and isinstance(alone[0], str):
        alone, shared = _select(alone, trials), _select(shared, trials)
    return _mean_time(shared) / _mean_time(alone)


def row_class(row: Mapping[str, Any]) -> str | None:
    """``nic`` or ``fabric`` when every link of the row is of that class, else None."""
    kinds = {kind for kind, _ in row["links"].values()}
    return kinds.pop() if len(kinds) == 1 else None


def fit_efficiencies(
    rows: Sequence[Mapping[str, Any]], trials: Trials, start: Efficiencies
) -> Efficiencies:
    """The sharing efficiencies that fit the ``fit`` rows best (see the module docstring)."""
    fitted = {"nic": start.nic, "fabric": start.fabric}
    for kind in fitted:
        chosen = [r for r in rows if r["split"] == "fit" and row_class(r) == kind]
        if chosen:
            fitted[kind] = _fit_one(chosen, trials, fitted, kind)
    return Efficiencies(**fitted)


def _fit_one(
    rows: Sequence[Mapping[str, Any]], trials: Trials, fitted: Mapping[str, float], kind: str
) -> float:
    targets = [math.log(measured_slowdown(r, trials)) for r in rows]

    def error(value: float) -> float:
        trial = Efficiencies(**{**fitted, kind: value})
        return sum(
            (math.log(predicted_slowdown(r, trial)) - t) ** 2
            for r, t in zip(rows, targets, strict=True)
        )

    best: float = min(GRID, key=error)
    return round(best, 4)
