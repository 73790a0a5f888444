"""Rank layout: which global ranks form the TP, CP, EP, DP and PP groups, and which pod holds them.

Theory of operation
-------------------
A job of world size W = tensor·context·data·pipeline numbers its ranks by a mixed-radix code
whose digit order is ``rankOrder`` (Megatron default ``tp-cp-ep-dp-pp``: the first dimension varies
fastest). Expert parallelism is carved out of data parallelism, as Megatron does it: the ``ep``
digit has radix ``expert`` and the ``dp`` digit has radix ``data/expert``, so the two together
enumerate the ``data`` replicas.

Groups are sets of ranks that differ only in some digits:

* tensor, context, expert, pipeline — only in that dimension's digit;
* data (dense gradient all-reduce) — in both the ``ep`` and the ``dp`` digit, i.e. across all
  ``data`` replicas of the same model shard;
* pipeline groups are stage chains: ranks ordered by their ``pp`` digit (stage 0 first).

Pod *k* holds ranks ``k*gpusPerPod … (k+1)*gpusPerPod−1`` and its local GPU *j* carries rank
``k*gpusPerPod + j``. Groups are sorted tuples of sorted tuples, so the layout of a spec is a
pure function of it and compares equal across runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fabricfit.api.models import Parallelism

GROUP_KINDS: tuple[str, ...] = ("tensor", "context", "expert", "data", "pipeline")

Group = tuple[int, ...]
Groups = tuple[Group, ...]


@dataclass(frozen=True, slots=True)
class RankLayout:
    """The groups of one job and the rank blocks of its pods."""

    world_size: int
    gpus_per_pod: int
    rank_order: tuple[str, ...]
    radix: Mapping[str, int]
    groups: Mapping[str, Groups]

    @property
    def pods(self) -> int:
        return self.world_size // self.gpus_per_pod

    def pod_of(self, rank: int) -> int:
        return rank // self.gpus_per_pod

    def pod_ranks(self, pod: int) -> range:
        start = pod * self.gpus_per_pod
        return range(start, start + self.gpus_per_pod)

    def stage_of(self, rank: int) -> int:
        """Pipeline stage (``pp`` digit) of ``rank``."""
        return self.digits(rank)["pp"]

    def digits(self, rank: int) -> dict[str, int]:
        """The mixed-radix digits of ``rank`` (keys tp, cp, ep, dp, pp)."""
        out: dict[str, int] = {}
        for digit in self.rank_order:
            size = self.radix[digit]
            out[digit] = rank % size
            rank //= size
        return out


def digit_radix(parallelism: Parallelism) -> dict[str, int]:
    """Radix of each rank digit; ``dp`` is ``data/expert`` because EP is carved out of DP."""
    return {
        "tp": parallelism.tensor,
        "cp": parallelism.context,
        "ep": parallelism.expert,
        "dp": max(1, parallelism.data // parallelism.expert),
        "pp": parallelism.pipeline,
    }


def build_layout(parallelism: Parallelism, gpus_per_pod: int, rank_order: str) -> RankLayout:
    """Derive every group of a job. Assumes ``validate_layout`` found no problem."""
    order = tuple(rank_order.split("-"))
    radix = digit_radix(parallelism)
    strides = _strides(order, radix)
    varying = {
        "tensor": ("tp",),
        "context": ("cp",),
        "expert": ("ep",),
        "data": ("ep", "dp"),
        "pipeline": ("pp",),
    }
    groups = {
        kind: _groups_varying(digits, order, radix, strides) for kind, digits in varying.items()
    }
    return RankLayout(
        world_size=parallelism.world_size,
        gpus_per_pod=gpus_per_pod,
        rank_order=order,
        radix=MappingProxyType(radix),
        groups=MappingProxyType(groups),
    )


def groups_over(layout: RankLayout, digits: tuple[str, ...]) -> Groups:
    """The groups of ranks that differ only in ``digits`` (e.g. ``("tp", "pp")``: the ranks
    of one serving replica's tensor and pipeline split), members in ascending rank order."""
    strides = _strides(layout.rank_order, layout.radix)
    return _groups_varying(digits, layout.rank_order, layout.radix, strides)


def _strides(order: tuple[str, ...], radix: Mapping[str, int]) -> dict[str, int]:
    strides: dict[str, int] = {}
    stride = 1
    for digit in order:
        strides[digit] = stride
        stride *= radix[digit]
    return strides


def _groups_varying(
    varying: tuple[str, ...],
    order: tuple[str, ...],
    radix: Mapping[str, int],
    strides: Mapping[str, int],
) -> Groups:
    """All groups of ranks that differ only in the ``varying`` digits.

    Members are listed with the varying digits in rank-order significance, which for a single
    digit is ascending rank order and, for pipeline groups, stage order.
    """
    fixed = [d for d in order if d not in varying]
    inner = [d for d in order if d in varying]
    offsets = sorted(_offsets(inner, radix, strides))
    groups = [tuple(base + o for o in offsets) for base in _offsets(fixed, radix, strides)]
    return tuple(sorted(groups))


def _offsets(digits: list[str], radix: Mapping[str, int], strides: Mapping[str, int]) -> list[int]:
    """Rank offsets of every combination of ``digits`` (the others at zero), in
    ``itertools.product`` order (the last digit fastest); built a digit at a time, so a
    262,144-rank job costs list arithmetic, not a generator and a sum per rank."""
    offsets = [0]
    for digit in digits:
        stride = strides[digit]
        steps = [stride * v for v in range(radix[digit])]
        offsets = [o + step for o in offsets for step in steps]
    return offsets


def validate_layout(
    parallelism: Parallelism,
    gpus_per_pod: int,
    *,
    experts: int = 0,
    max_domain_gpus: int | None = None,
    tensor_required: bool = True,
) -> tuple[str, ...]:
    """Every reason the parallel layout cannot be placed, one sentence each (empty: valid).

    ``max_domain_gpus`` is the largest NVLink domain of the cluster in GPUs (None: unknown).
    """
    p = parallelism
    reasons: list[str] = []
    if p.world_size % gpus_per_pod:
        reasons.append(
            f"world size {p.world_size} (tensor {p.tensor} × pipeline {p.pipeline} × data "
            f"{p.data} × context {p.context}) is not a multiple of gpusPerPod {gpus_per_pod}"
        )
    if p.data % p.expert:
        reasons.append(f"expert parallelism {p.expert} does not divide data parallelism {p.data}")
    if experts and experts % p.expert:
        reasons.append(
            f"model.experts {experts} is not a multiple of expert parallelism {p.expert}"
        )
    if (p.tensor > gpus_per_pod and p.tensor % gpus_per_pod) or (
        p.tensor < gpus_per_pod and gpus_per_pod % p.tensor
    ):
        reasons.append(
            f"a tensor-parallel group of {p.tensor} GPUs would split pods of {gpus_per_pod} GPUs: "
            "tensor must divide gpusPerPod or be a multiple of it"
        )
    if tensor_required and max_domain_gpus is not None and p.tensor > max_domain_gpus:
        reasons.append(
            f"tensor parallelism {p.tensor} exceeds the largest NVLink domain "
            f"({max_domain_gpus} GPUs) while placement.tensor is Required"
        )
    return tuple(reasons)
