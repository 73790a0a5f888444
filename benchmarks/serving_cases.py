"""The serving benchmark's cases, and how each side's placement is priced (pure; shared by
``serving.py``, the offline emulation, and ``serving_kueue.py``, the run against real Kueue).

A case is a served model — replicas, a replica spread, or a disaggregated prefill/decode pair
whose decode side is placed second — and both sides' placements are priced by the same
function (:func:`price`: the search's own cost bridge, ``StepModel``), so only the choice
differs. For a pair, the decode side's KV transfer is priced against *its own* side's prefill
placement: Kueue's decode against Kueue's prefill, fabricfit's against fabricfit's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from fabricfit.api.models import ModelShape, Parallelism
from fabricfit.api.serving import ServingSpec
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.costing import StepModel
from fabricfit.placement.decision import StepTimes
from fabricfit.placement.layout import build_layout
from fabricfit.placement.pairing import Partner, replica_pods
from fabricfit.placement.request import PlacementRequest
from fabricfit.placement.slots import PodSlot

ORDER = "tp-cp-ep-pp-dp"
# Llama 3 70B and 405B (GQA, 8 key/value heads of 128), a DeepSeek-like MoE (every layer MoE).
LLAMA70B = ModelShape(hidden_size=8192, layers=80, attention_heads=64, kv_heads=8)
LLAMA405B = ModelShape(hidden_size=16384, layers=126, attention_heads=128, kv_heads=8)
MOE = ModelShape(hidden_size=7168, layers=61, attention_heads=128, kv_heads=8, experts=256, top_k=8)


@dataclass(frozen=True)
class Case:
    """One served model; ``prefill`` set: the decode side of a pair, the prefill placed first."""

    label: str
    parallelism: Parallelism
    model: ModelShape
    serving: ServingSpec
    gpus: int  # GPUs of one replica's pod (whole node on HGX; a tray on NVL72 when larger)
    prefill: Parallelism | None = None
    # The prefill side is an existing deployment spread over racks (fabricfit's plan, the
    # same for both sides): only the decode side's placement is compared.
    prefill_spread: bool = False

    def request(self, gpus_per_pod: int) -> PlacementRequest:
        return PlacementRequest(
            parallelism=self.parallelism,
            gpus_per_pod=gpus_per_pod,
            rank_order=ORDER,
            model=self.model,
            serving=self.serving,
        )


def serving(**fields: object) -> ServingSpec:
    return ServingSpec.model_validate({"decodeBatch": 64, "promptTokens": 4096, **fields})


CASES = (
    Case("Llama 70B, TP8 x 4 replicas", Parallelism(tensor=8, data=4), LLAMA70B, serving(), 8),
    Case(
        "Llama 70B, TP8 x 4, spread over racks",
        Parallelism(tensor=8, data=4),
        LLAMA70B,
        serving(spread="Rack"),
        8,
    ),
    Case(
        "Llama 405B, TP8 x PP2 x 2 replicas",
        Parallelism(tensor=8, pipeline=2, data=2),
        LLAMA405B,
        serving(),
        8,
    ),
    Case(
        "MoE, TP4 x EP4 (one instance)",
        Parallelism(tensor=4, data=4, expert=4),
        MOE,
        serving(decodeBatch=128),
        8,
    ),
    Case(
        "Llama 70B disaggregated: decode TP8 x 4 next to a packed prefill TP8 x 2",
        Parallelism(tensor=8, data=4),
        LLAMA70B,
        serving(role="decode", pairedWith="prefill"),
        8,
        prefill=Parallelism(tensor=8, data=2),
    ),
    Case(
        "Llama 70B disaggregated: decode TP8 x 4 next to a prefill TP8 x 4 spread over racks",
        Parallelism(tensor=8, data=4),
        LLAMA70B,
        serving(role="decode", pairedWith="prefill"),
        8,
        prefill=Parallelism(tensor=8, data=4),
        prefill_spread=True,
    ),
    Case(
        "Llama 70B, TP8 in 4-GPU pods x 4 replicas",
        Parallelism(tensor=8, data=4),
        LLAMA70B,
        serving(),
        4,
    ),
)


def pod_gpus(case: Case, profile: FabricProfile) -> int:
    """GPUs per pod on ``profile``: a node's worth at most (TP8 spans two NVL72 trays)."""
    return min(case.gpus, profile.gpus_per_node)


def prefill_case(case: Case) -> Case:
    assert case.prefill is not None
    update = {"role": "prefill", "paired_with": "decode"}
    if case.prefill_spread:
        update["spread"] = "Rack"
    return replace(
        case,
        parallelism=case.prefill,
        serving=case.serving.model_copy(update=update),
        prefill=None,
    )


def partner_of(case: Case, gpus_per_pod: int, slots: Sequence[PodSlot]) -> Partner:
    """The prefill side as the decode side reads it: its pods' nodes and GPUs."""
    assert case.prefill is not None
    return Partner(
        name="prefill",
        parallelism=case.prefill,
        gpus_per_pod=gpus_per_pod,
        rank_order=ORDER,
        pods=tuple(s.node for s in slots),
        gpus=tuple(s.gpus for s in slots),
    )


def price(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    slots: Sequence[PodSlot],
) -> StepTimes:
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    model = StepModel(snapshot, layout, request, profile)
    return model.predict(model.rank_slots(slots))


def most_per_rack(request: PlacementRequest, slots: Sequence[PodSlot]) -> int:
    """Replicas in the most crowded rack (a replica across two counts in both)."""
    layout = build_layout(request.parallelism, request.gpus_per_pod, request.rank_order)
    load: Counter[str] = Counter()
    for pods in replica_pods(layout):
        load.update({slots[p].rack for p in pods})
    return max(load.values(), default=0)


def ratio(theirs: float | None, ours: float | None) -> float | None:
    if theirs is None or ours is None:
        return None
    if ours <= 0:
        return 1.0 if theirs <= 0 else None
    return theirs / ours


@dataclass(frozen=True)
class Side:
    """One side's placement of a case, priced."""

    nodes: tuple[str, ...]
    decode_s: float | None
    prefill_s: float | None
    kv_s: float | None
    objective_s: float
    most_per_rack: int


def side(
    snapshot: ClusterSnapshot,
    request: PlacementRequest,
    profile: FabricProfile,
    slots: Sequence[PodSlot],
) -> Side:
    times = price(snapshot, request, profile, slots)
    phases = times.serving
    assert phases is not None
    return Side(
        nodes=tuple(s.node for s in slots),
        decode_s=phases.decode_token_comm_seconds,
        prefill_s=phases.prefill_comm_seconds,
        kv_s=phases.kv_transfer_seconds,
        objective_s=times.step_comm_seconds,
        most_per_rack=most_per_rack(request, slots),
    )
