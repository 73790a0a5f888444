"""Peer placers: what the schedulers users already run would do with the same job.

Each peer is a pure function ``(domains, pods) -> tuple[PodSlot, ...] | None`` over the same pod
slots fabricfit's search uses (a window of ``gpusPerPod`` free GPUs on one node, same GPU-index
convention), returning the pods in the peer's rank order (pod *k* of the tuple holds ranks
``k·g … k·g+g−1``) or ``None`` when the slots cannot hold the job. Every placement, fabricfit's
and a peer's, is then priced by the same cost model, so only the *choice* differs:

* :func:`kueue_bestfit` — Kueue Topology-Aware Scheduling's BestFit
  (:mod:`~fabricfit.placement.peers.kueue_bestfit`);
* :func:`spread` — kube-scheduler's default scoring, no topology
  (:mod:`~fabricfit.placement.peers.spread`).

The search adds the Kueue placement as one of its candidates, so fabricfit never predicts more
step communication than Kueue would (``placement.search``); ``fabricfit simulate`` and the
benchmarks replay the same jobs with each peer.
"""

from collections.abc import Callable, Sequence

from fabricfit.placement.peers.kueue_bestfit import kueue_bestfit
from fabricfit.placement.peers.spread import spread
from fabricfit.placement.slots import LeafDomain, PodSlot

Peer = Callable[[Sequence[LeafDomain], int], tuple[PodSlot, ...] | None]

#: Peers by the name the CLI and the benchmarks use.
PEERS: dict[str, Peer] = {"kueue-bestfit": kueue_bestfit, "spread": spread}

__all__ = ["PEERS", "Peer", "kueue_bestfit", "spread"]
