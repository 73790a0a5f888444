"""Who picks the GPUs of a plan, and the snapshot the planner sees for it (pure).

:func:`settle_devices` joins what the pods' claims allow (``fabric.deviceask``) with the
devices of the cluster: device-exact planning (every held or unusable device marked,
``placement.devices.device_view``) when fabricfit can allocate the claims itself and check every
selector, else a plan priced on what the device plugin or kube-scheduler hands out
(``placement.handout``), with the reason in words for status and ``fabricfit plan``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from fabricfit.fabric.deviceask import DeviceAsk, unusable_devices
from fabricfit.fabric.topology import ClusterSnapshot
from fabricfit.placement.devices import device_view
from fabricfit.placement.request import ENFORCED, NOT_ENFORCED, PlacementRequest

PLUGIN_WORDS = (
    "the device plugin picks each pod's GPUs on its pinned node (nvidia.com/gpu): the plan is "
    "priced on what it hands out, the lowest free aligned windows, in the worse of two orders"
)
SCHEDULER_WORDS = (
    "kube-scheduler's DRA allocator picks the devices on each pinned node: the plan is priced "
    "on what it hands out, the lowest free windows, in the worse of two orders"
)


@dataclass(frozen=True)
class DeviceChoice:
    """The request and snapshot a plan is made with, and who picks the GPUs, in words."""

    request: PlacementRequest
    snapshot: ClusterSnapshot
    words: str

    @property
    def enforced(self) -> bool:
        return self.request.gpu_choice == ENFORCED


def settle_devices(
    request: PlacementRequest,
    ask: DeviceAsk | None,
    snapshot: ClusterSnapshot,
    held: Mapping[str, frozenset[str]] | None = None,
) -> DeviceChoice:
    """Who picks the GPUs of this plan, with the snapshot the planner must see: device-exact
    (held and unusable devices marked, ``held`` naming other plans' devices per node) when
    :func:`device_ask` allows it and every selector can be checked here, else not enforced."""
    if ask is None:
        return DeviceChoice(replace(request, gpu_choice=NOT_ENFORCED), snapshot, PLUGIN_WORDS)
    if not ask.enforced or snapshot.devices is None:
        why = ask.reason if not ask.enforced else "no ResourceSlice lists the devices"
        plain = replace(request, gpu_choice=NOT_ENFORCED)
        return DeviceChoice(plain, snapshot, f"{why}; {SCHEDULER_WORDS}")
    unusable = unusable_devices(ask, snapshot.devices)
    if unusable is None:
        why = "a device selector needs Kubernetes' own CEL library (semver, quantities)"
        plain = replace(request, gpu_choice=NOT_ENFORCED)
        return DeviceChoice(plain, snapshot, f"{why}; {SCHEDULER_WORDS}")
    merged = {
        n: unusable.get(n, frozenset()) | (held or {}).get(n, frozenset())
        for n in {*unusable, *(held or {})}
    }
    return DeviceChoice(request, device_view(snapshot, request, merged), ask.reason)
