"""Baseline placers the benchmarks compare fabricfit against.

The peers (what Kueue TAS BestFit and the default kube-scheduler would do) live in the package,
``fabricfit.placement.peers``, because the search and ``fabricfit simulate`` use them too; this
module adds a seeded uniformly random feasible placement, a floor no scheduler should sink to.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from fabricfit.placement.peers import kueue_bestfit, spread
from fabricfit.placement.slots import LeafDomain, PodSlot

Assignment = tuple[PodSlot, ...]


def random_feasible(domains: Sequence[LeafDomain], pods: int, seed: int = 0) -> Assignment | None:
    slots = [s for d in domains for s in d.slots]
    if len(slots) < pods:
        return None
    rng = random.Random(seed)
    return tuple(rng.sample(slots, pods))


BASELINES: dict[str, Callable[[Sequence[LeafDomain], int, int], Assignment | None]] = {
    "spread": lambda domains, pods, _seed: spread(domains, pods),
    "bestfit": lambda domains, pods, _seed: kueue_bestfit(domains, pods),
    "random": random_feasible,
}
