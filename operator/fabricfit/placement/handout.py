"""The GPUs a pod gets when fabricfit does not choose them: what is handed out (pure).

Theory of operation
-------------------
With the device plugin (``nvidia.com/gpu``) fabricfit pins a pod's node, and kubelet asks
NVIDIA's k8s-device-plugin which GPUs to give it (``GetPreferredAllocation``). For whole GPUs
the plugin answers with go-gpuallocator's best-effort policy
(NVIDIA/k8s-device-plugin ``internal/rm/nvml_manager.go:112-150`` @v0.20.0 1b826acc): of every
partition of the node's free GPUs into sets of the pod's size, the one with the highest sum of
pairwise scores, then the best set of it, the first one found on ties
(NVIDIA/go-gpuallocator ``gpuallocator/besteffort_policy.go:36-95`` @876e7b76). A pair scores
100 per NVLink between the two GPUs — none on NVSwitch boards, where NVML names the switch as
the link's far end (``internal/links/device.go:142-200``: "TODO: Handle NVSwitch semantics") —
plus its PCIe common ancestor: one board 60, one switch 50, several switches 40, one host
bridge 30, one CPU 20, across CPUs 10 (``besteffort_policy.go:304-374``). On an HGX/DGX board
the GPUs of one PCIe switch or socket outscore a mixed set, and partitions are enumerated
lowest index first: a pod gets the lowest entirely free *aligned* window, the windows
``placement.slots`` cuts. kube-scheduler's DRA allocator, for a claim fabricfit does not
allocate, takes a pool's devices in the order its slice lists them (gpu-0 first) and lands on
the same windows.

What nobody predicts is *which* of a job's pods on one node gets which window: kubelet admits
them in the order they bind. So the job's ``k`` pods on a node take its ``k`` lowest free
windows, and a plan is priced in the worse of two orders (:meth:`Handout.orders`): pod-index
order on every node, and reversed on every other node of the plan — the case where data-parallel
peers of one pipeline stage end up on different rails of two nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fabricfit.placement.slots import LeafDomain, PodSlot


class Handout:
    """The free windows of every node a plan may use, lowest first."""

    def __init__(self, domains: Iterable[LeafDomain]) -> None:
        free: dict[str, list[PodSlot]] = {}
        for domain in domains:
            for slot in domain.slots:
                free.setdefault(slot.node, []).append(slot)
        self._free = {n: tuple(sorted(s, key=lambda x: x.gpus)) for n, s in free.items()}

    def assign(self, slots: Sequence[PodSlot], *, alternate: bool = False) -> tuple[PodSlot, ...]:
        """``slots`` with each node's pods moved onto its lowest free windows, in pod-index
        order (``alternate``: reversed on every other node, counted in order of first use)."""
        pods_on: dict[str, list[int]] = {}
        for index, slot in enumerate(slots):
            pods_on.setdefault(slot.node, []).append(index)
        out = list(slots)
        for ordinal, (node, pods) in enumerate(pods_on.items()):
            windows = self._free.get(node, ())
            if len(windows) < len(pods):
                continue  # not one of the plan's free nodes: keep what the candidate said
            chosen = list(windows[: len(pods)])
            if alternate and ordinal % 2 == 1:
                chosen.reverse()
            for index, window in zip(pods, chosen, strict=True):
                out[index] = window
        return tuple(out)

    def orders(self, slots: Sequence[PodSlot]) -> tuple[tuple[PodSlot, ...], ...]:
        """The hand-out orders to price ``slots`` in: one, or two when a node holds several
        pods of the job and the two orders differ."""
        first = self.assign(slots)
        second = self.assign(slots, alternate=True)
        return (first,) if second == first else (first, second)
