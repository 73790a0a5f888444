"""Bridge to the cost model: rank locations in, predicted per-step communication seconds out.

Theory of operation
-------------------
The cost model (``fabricfit.cost.step``) prices one training step's collectives from the groups
and the fabric location of every rank; a served model (``request.serving``) is priced per token
instead (``fabricfit.cost.serving``: a decode step, a prefill, and the KV-cache transfer from or
to the partner's recorded plan, ``placement.pairing``), its objective in ``step_comm_seconds``
and the phases in ``StepTimes.serving``. The search calls it once per candidate and per local
move, so this module keeps the per-job constants (groups as plain lists, the lower bound, the
partner's located ranks) and a cache of ``GpuSlot`` values per pod slot, and converts the cost
model's estimate to the placement's own frozen ``StepTimes`` so the rest of ``placement`` does
not depend on its type. Given the running jobs (``neighbours``), it prices each training
candidate next to them as well (``placement.neighbours``; a served model's traffic is not in
that model yet, so it is priced alone).
"""

from __future__ import annotations

from collections.abc import Sequence

from fabricfit.cost.bounds import BoundJob, hardware_of, step_lower_bound
from fabricfit.cost.serving import (
    KvTransfer,
    ServedJob,
    ServingCommEstimate,
    estimate_serving,
    serving_lower_bound,
)
from fabricfit.cost.step import StepCommEstimate, cross_rail_groups, estimate_step
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot, GpuSlot
from fabricfit.placement.constraints import usable_nodes
from fabricfit.placement.decision import ServingTimes, StepTimes
from fabricfit.placement.layout import GROUP_KINDS, RankLayout
from fabricfit.placement.neighbours import Assessment, NeighbourPricer, Neighbours
from fabricfit.placement.pairing import kv_transfer, partner_slots
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.slots import PodSlot


def to_step_times(estimate: StepCommEstimate) -> StepTimes:
    by_dimension = {k: float(estimate.by_dimension.get(k, 0.0)) for k in GROUP_KINDS}
    return StepTimes(
        step_comm_seconds=float(estimate.step_comm_seconds),
        by_dimension=by_dimension,
        spine_bytes_per_step=float(estimate.spine_bytes_per_step),
    )


def serving_step_times(estimate: ServingCommEstimate) -> StepTimes:
    by_dimension = estimate.by_dimension
    return StepTimes(
        step_comm_seconds=float(estimate.comm_seconds),
        by_dimension={k: float(by_dimension.get(k, 0.0)) for k in GROUP_KINDS},
        spine_bytes_per_step=float(estimate.spine_bytes),
        serving=ServingTimes(
            decode_token_comm_seconds=_phase(estimate.decode),
            prefill_comm_seconds=_phase(estimate.prefill),
            kv_transfer_seconds=estimate.kv_transfer_seconds,
        ),
    )


def _phase(estimate: StepCommEstimate | None) -> float | None:
    return None if estimate is None else float(estimate.step_comm_seconds)


class StepModel:
    """Prices candidates of one job on one snapshot (a per-plan helper, never shared)."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        layout: RankLayout,
        request: PlacementRequest,
        profile: FabricProfile,
        neighbours: Neighbours | None = None,
    ) -> None:
        self._snapshot = snapshot
        self._request = request
        self._profile = profile
        self._groups = {k: [list(g) for g in layout.groups[k]] for k in GROUP_KINDS}
        self._pod_gpus: dict[PodSlot, tuple[GpuSlot, ...]] = {}
        self._pricer = (
            NeighbourPricer(neighbours, self._groups, request, profile)
            if neighbours is not None and request.serving is None
            else None
        )
        self.evaluations = 0
        self._kv = self._locate_partner(layout)

    def rank_slots(self, slots: Sequence[PodSlot]) -> tuple[GpuSlot, ...]:
        """Location of every global rank: local GPU j of pod k is ``slots[k].gpus[j]``."""
        out: list[GpuSlot] = []
        cache = self._pod_gpus
        for slot in slots:
            found = cache.get(slot)
            if found is None:
                start = slot.gpus[0]
                found = cache[slot] = tuple(
                    self._snapshot.slot(slot.node, g, start) for g in slot.gpus
                )
            out.extend(found)
        return tuple(out)

    def _locate_partner(self, layout: RankLayout) -> tuple[KvTransfer, tuple[GpuSlot, ...]] | None:
        """The KV transfer to or from the partner's plan and the partner's located ranks."""
        request = self._request
        if request.serving is None or request.partner is None:
            return None
        located = partner_slots(self._snapshot, request.partner)
        transfer = kv_transfer(layout, request.model, request.serving, request.partner)
        return None if located is None or transfer is None else (transfer, located)

    def predict(self, ranks: Sequence[GpuSlot]) -> StepTimes:
        """Predicted step communication of ``ranks``, next to the neighbours when given."""
        return self.assess(ranks).times

    def assess(self, ranks: Sequence[GpuSlot]) -> Assessment:
        """The prediction, and with neighbours what the placement costs the running jobs."""
        self.evaluations += 1
        request = self._request
        if request.serving is not None:
            kv = None if self._kv is None else (self._kv[0], (*ranks, *self._kv[1]))
            job = ServedJob(request.parallelism, request.model, request.serving)
            served = estimate_serving(job, self._groups, ranks, self._profile, kv)
            return Assessment(serving_step_times(served))
        estimate = estimate_step(
            self._groups,
            ranks,
            self._request.parallelism,
            self._request.model,
            self._profile,
        )
        alone = to_step_times(estimate)
        if self._pricer is None:
            return Assessment(alone)
        return self._pricer.assess(ranks, alone)

    def cross_rail(self, ranks: Sequence[GpuSlot]) -> dict[str, int]:
        """Per dimension, the groups whose traffic changes rails (cost.step)."""
        return cross_rail_groups(self._groups, ranks, self._profile)

    def lower_bound(self) -> StepTimes:
        """The bound no placement of this job on this cluster can beat (cost.bounds), on the
        nodes the job may use (its selectors, affinity, tolerations), busy or not: a larger
        NVLink domain the job can never reach does not lower it."""
        request = self._request
        hardware = hardware_of(usable_nodes(self._snapshot.nodes, request), self._profile)
        if request.serving is not None:
            served = serving_lower_bound(
                ServedJob(request.parallelism, request.model, request.serving),
                self._profile,
                BoundJob(request.world_size, request.gpus_per_pod, self._groups),
                hardware=hardware,
                kv_shard_bytes=None if self._kv is None else self._kv[0].shard_bytes,
            )
            return serving_step_times(served)
        bound = step_lower_bound(
            request.parallelism,
            request.model,
            self._profile,
            request.gpus_per_pod,
            self._groups,
            hardware=hardware,
        )
        return to_step_times(bound)
