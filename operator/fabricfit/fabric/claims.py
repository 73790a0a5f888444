"""GPUs that Dynamic Resource Allocation has handed out, from plain ResourceClaim dicts (pure).

Theory of operation
-------------------
kube-scheduler allocates a ResourceClaim while it binds the pod that uses it and writes the
result to ``status.allocation``: ``devices.results[]`` names each device by ``driver``, ``pool``
and ``device`` (the pool and device name of a ResourceSlice), and ``nodeSelector`` pins the
claim to the node it was allocated on; ``status.reservedFor`` lists the pods using it. A GPU is
held from allocation until the claim is deallocated (the claim controller does that once no pod
uses it), whatever phase its pods are in, so every allocated result of the GPU driver counts.

A result is placed on a node through the ResourceSlices (pool + device → node); when the slices
no longer list it (the driver restarted, or no slices were given), through the allocation's
node selector (``metadata.name In [node]``, what the scheduler writes for node-local devices),
else through the pool name (NVIDIA's driver names each pool after its node). A device the
slices know as something other than a whole GPU (MIG, VFIO) is not a GPU held. Results with
``adminAccess`` (monitoring access next to the real user) hold nothing, and a device allocated
in several claims counts once.

``by_pod`` attributes a claim's GPUs to its pod when exactly one pod uses the claim (a claim
stamped from a ResourceClaimTemplate has exactly one), so the reservation ledger can tell a
bound pod's GPUs from a plan's reservation. ``allocated`` names every device any allocated
claim holds, of every driver (GPUs and the NICs dranet publishes alike), as
``(driver, pool, device)``: what device-exact placement must leave alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fabricfit.api.constants import DRA_GPU_DRIVER
from fabricfit.fabric.objects import list_at, mapping_at, str_at, value_at
from fabricfit.fabric.resourceslices import DraInventory
from fabricfit.fabric.topology import Diagnostic

PodKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class ClaimHolds:
    """GPUs that allocated ResourceClaims hold, per node and per using pod."""

    by_node: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    by_pod: Mapping[PodKey, int] = field(default_factory=lambda: MappingProxyType({}))
    diagnostics: tuple[Diagnostic, ...] = ()
    allocated: frozenset[tuple[str, str, str]] = frozenset()  # (driver, pool, device)


def read_claim_holds(claims: object, inventory: DraInventory | None = None) -> ClaimHolds:
    """What the allocated claims in ``claims`` (``items`` of ``kubectl get resourceclaims -A``)
    hold; ``inventory`` places devices on nodes (see the module docstring)."""
    inventory = inventory if inventory is not None else DraInventory()
    diagnostics: list[Diagnostic] = []
    if isinstance(claims, Mapping | str | bytes) or not isinstance(claims, Iterable):
        message = "resource claims is not a list; no allocated DRA devices read"
        return ClaimHolds(diagnostics=(Diagnostic(node="", message=message, severity="error"),))
    seen: set[tuple[str, str]] = set()
    allocated: set[tuple[str, str, str]] = set()
    by_node: dict[str, int] = {}
    by_pod: dict[PodKey, int] = {}
    for index, claim in enumerate(claims):
        where = _claim_id(claim, index)
        if not isinstance(claim, Mapping):
            diagnostics.append(Diagnostic(node=where, message="is not an object; skipped"))
            continue
        held = _held_devices(claim, where, inventory, diagnostics)
        allocated.update(_results(claim))
        fresh = [(pool, device, node) for pool, device, node in held if (pool, device) not in seen]
        seen.update((pool, device) for pool, device, _ in fresh)
        for _, _, node in fresh:
            by_node[node] = by_node.get(node, 0) + 1
        pod = _only_pod(claim)
        if pod is not None and held:
            by_pod[pod] = by_pod.get(pod, 0) + len(held)
    ordered = sorted(dict.fromkeys(diagnostics), key=lambda d: (d.node, d.message))
    return ClaimHolds(
        by_node=MappingProxyType(dict(sorted(by_node.items()))),
        by_pod=MappingProxyType(dict(sorted(by_pod.items()))),
        diagnostics=tuple(ordered),
        allocated=frozenset(allocated),
    )


def _results(claim: Mapping[str, object]) -> list[tuple[str, str, str]]:
    """(driver, pool, device) of every result the claim's allocation holds exclusively."""
    found: list[tuple[str, str, str]] = []
    for result in list_at(claim, "status", "allocation", "devices", "results"):
        if value_at(result, "adminAccess") is True:
            continue  # monitoring access next to the real user: holds nothing
        driver, pool, device = (
            str_at(result, "driver"),
            str_at(result, "pool"),
            str_at(result, "device"),
        )
        if driver and pool and device:
            found.append((driver, pool, device))
    return found


def _held_devices(
    claim: Mapping[str, object],
    where: str,
    inventory: DraInventory,
    diagnostics: list[Diagnostic],
) -> list[tuple[str, str, str]]:
    """(pool, device, node) of every whole GPU the claim's allocation holds."""
    allocation = mapping_at(claim, "status", "allocation")
    if not allocation:
        return []
    selected = _selected_node(allocation)
    held: list[tuple[str, str, str]] = []
    for result in list_at(allocation, "devices", "results"):
        if str_at(result, "driver") != DRA_GPU_DRIVER or value_at(result, "adminAccess") is True:
            continue
        pool, device = str_at(result, "pool"), str_at(result, "device")
        if not pool or not device:
            message = "an allocation result has no pool or device name; not counted"
            diagnostics.append(Diagnostic(node=where, message=message))
            continue
        node = inventory.node_of(pool, device)
        if node is not None and not inventory.is_gpu(pool, device):
            continue  # a MIG or VFIO device, not a whole GPU
        if node is None:
            node = selected or pool
        held.append((pool, device, node))
    return held


def _selected_node(allocation: Mapping[str, object]) -> str | None:
    """The node of ``metadata.name In [node]`` in the allocation's node selector, if any."""
    for term in list_at(allocation, "nodeSelector", "nodeSelectorTerms"):
        for match in list_at(term, "matchFields"):
            values = list_at(match, "values")
            if (
                str_at(match, "key") == "metadata.name"
                and str_at(match, "operator") == "In"
                and len(values) == 1
                and isinstance(values[0], str)
            ):
                return values[0]
    return None


def _only_pod(claim: Mapping[str, object]) -> PodKey | None:
    users = list_at(claim, "status", "reservedFor")
    pods = [u for u in users if str_at(u, "resource") == "pods" and not str_at(u, "apiGroup")]
    name = str_at(pods[0], "name") if len(pods) == 1 and len(users) == 1 else None
    if not name:
        return None
    return (str_at(claim, "metadata", "namespace") or "default", name)


def _claim_id(claim: object, index: int) -> str:
    name = str_at(claim, "metadata", "name")
    if not name:
        return f"resourceclaims[{index}]"
    namespace = str_at(claim, "metadata", "namespace") or "default"
    return f"resourceclaim {namespace[:63]}/{name[:253]}"
