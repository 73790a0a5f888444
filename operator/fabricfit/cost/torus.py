"""Collectives on a TPU torus (ICI) and between slices (DCN).

Theory of operation
-------------------
A group of n chips inside one slice is taken to occupy a compact sub-slice whose shape is the
most cubic factorisation of n that fits the pod (how Cloud TPU slices are shaped: 2x2x1, 2x2x2,
2x2x4, 4x4x4, ... on v4/v5p; 2x2, 2x4, 4x4, ... 16x16 on v5e). Each axis of size X runs a
bidirectional ring when it has a wraparound link, else a line (scaling-book sharding.md):

* wraparound exists on v4/v5p only when every axis is a multiple of the 4x4x4 OCS cube, on v5e
  only on an axis of 16 (``TorusSpec.wrap_rule``);
* all-gather / reduce-scatter over several axes at once:
  ``T = max(T_min·Σ hops, (n−1)/n·S / Σ_axes W_axis)`` with ``W_axis = 2·W_link`` on a ring
  and ``W_link`` on a line ("typically doubles the time"), all-reduce = 2× (RS + AG);
* all-to-all decomposes into per-axis phases, each ``X·S / (4·W_axis)`` (¼ of an all-gather of
  the whole array on a bidirectional ring, scaling-book);
* groups spanning several slices reduce inside each slice over ICI, then across slices over
  DCN on 1/m of the buffer per chip, each chip getting 1/chips_per_host of its host's DCN.
"""

from __future__ import annotations

import math
from functools import lru_cache

from fabricfit.cost.algorithms import GB, US, Candidate
from fabricfit.cost.shape import GroupShape
from fabricfit.fabric.profiles import FabricProfile, TorusSpec


@lru_cache(maxsize=4096)
def slice_shape(chips: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    """Most cubic axis sizes for ``chips`` within ``dims``: prime factors, largest first,
    each multiplied into the currently smallest axis that still has room."""
    axes = [1] * len(dims)
    remaining = chips
    factors: list[int] = []
    p = 2
    while remaining > 1 and p * p <= remaining:
        while remaining % p == 0:
            factors.append(p)
            remaining //= p
        p += 1
    if remaining > 1:
        factors.append(remaining)
    for f in sorted(factors, reverse=True):
        order = sorted(range(len(axes)), key=lambda i: (axes[i], i))
        slot = next((i for i in order if axes[i] * f <= dims[i]), order[0])
        axes[slot] *= f
    return tuple(sorted(axes, reverse=True))


def wraps(axes: tuple[int, ...], torus: TorusSpec) -> tuple[bool, ...]:
    """Which axes have wraparound links (scaling-book tpus.md; Cloud TPU docs)."""
    if torus.wrap_rule == "cube":
        full = all(a % torus.cube_edge == 0 for a in axes if a > 1)
        return tuple(full and a > 2 for a in axes)
    limit = max(torus.dims)
    return tuple(a == limit for a in axes)


def group_axes(shape: GroupShape, torus: TorusSpec) -> tuple[int, ...]:
    """Axes the group's rings run on. Whole hosts form a compact sub-slice; a group taking
    only part of each of several hosts is one mesh axis (e.g. the Y axis of an 8x4 mesh)."""
    m = shape.max_per_domain
    if shape.nodes > 1 and shape.max_per_node < torus.chips_per_host and m <= max(torus.dims):
        return (m,)
    return slice_shape(m, torus.dims)


def _ici(axes: tuple[int, ...], torus: TorusSpec, load: float) -> tuple[float, float, float]:
    """(Σ W_axis GB/s, hops of one AG, Σ_i X_i / (4·W_i) all-to-all seconds per byte)."""
    link = torus.ici_link_gb_per_s * torus.ici_efficiency / load
    bw, hops, a2a = 0.0, 0.0, 0.0
    for size, wrap in zip(axes, wraps(axes, torus), strict=True):
        if size <= 1:
            continue
        w = 2 * link if wrap else link
        bw += w
        hops += size / 2 if wrap else size - 1
        a2a += size / (4 * w * GB)
    return bw, hops, a2a


def torus_candidates(
    collective: str, size: int, shape: GroupShape, profile: FabricProfile, load: float
) -> list[Candidate]:
    torus = profile.torus
    assert torus is not None  # caller checks profile.is_torus
    m = shape.max_per_domain
    bw, hops, a2a_per_byte = _ici(group_axes(shape, torus), torus, load)
    t_min = torus.ici_hop_latency_us * US
    phases = {"all-reduce": 2, "reduce-scatter": 1, "all-gather": 1}.get(collective, 1)
    if m <= 1:
        lat_s, ici_s = 0.0, 0.0
    elif collective == "all-to-all":
        lat_s, ici_s = hops * t_min, size * a2a_per_byte
    elif collective == "send-recv":
        lat_s, ici_s = t_min, size / (torus.ici_link_gb_per_s * torus.ici_efficiency / load * GB)
    else:
        factor = (
            (m - 1) / m if collective in ("all-reduce", "reduce-scatter", "all-gather") else 1.0
        )
        lat_s, ici_s = phases * hops * t_min, phases * factor * size / (bw * GB)
    if not shape.multi_domain:
        return [Candidate("torus", "ici", lat_s, ici_s, "ici")]
    dcn_lat_s, dcn_s = _dcn_seconds(collective, size, shape, profile, load)
    tier = "dcn" if dcn_s >= ici_s else "ici"
    return [Candidate("torus", "ici+dcn", lat_s + dcn_lat_s, ici_s + dcn_s, tier)]


def _dcn_seconds(
    collective: str, size: int, shape: GroupShape, profile: FabricProfile, load: float
) -> tuple[float, float]:
    """(latency, transfer) seconds of the DCN level between slices."""
    torus = profile.torus
    assert torus is not None
    d, m, n = shape.domains, shape.max_per_domain, shape.ranks
    per_chip = torus.dcn_gb_per_s_per_host / torus.chips_per_host / load * GB
    hop_s = profile.net_hop_latency_us * US
    if collective == "all-reduce":
        return 2 * (d - 1) * hop_s, 2 * (d - 1) / d * size / m / per_chip
    if collective in ("reduce-scatter", "all-gather"):
        return (d - 1) * hop_s, (d - 1) / d * size / m / per_chip
    if collective == "all-to-all":
        return hop_s, size * (n - m) / n / per_chip
    return math.ceil(math.log2(d)) * hop_s, size / per_chip
