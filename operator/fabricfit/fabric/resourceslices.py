"""GPUs that Dynamic Resource Allocation publishes, from plain ResourceSlice dicts (pure).

Theory of operation
-------------------
On a cluster that hands out GPUs through DRA (``resource.k8s.io``) instead of the device
plugin, nodes carry no ``nvidia.com/gpu`` allocatable: NVIDIA's DRA driver publishes each
node's GPUs as devices of driver ``gpu.nvidia.com`` in ResourceSlices, one pool per node named
after it, ``spec.nodeName`` set (kubernetes-sigs/dra-driver-nvidia-gpu,
``cmd/gpu-kubelet-plugin/deviceinfo.go``). Each device carries typed attributes — ``type``
(``gpu``, ``mig``, ``vfio``), ``uuid``, ``productName``, ``architecture``,
``cudaComputeCapability``, ``driverVersion``, and the PCI bus id (``pcieBusID`` in older
releases, the standard ``resource.kubernetes.io/pciBusID`` since driver PR #800) — and a
``memory`` capacity. The driver no longer publishes ``index`` or ``minor`` (issue #563: NVML's
enumeration order changes when a GPU falls off the bus), so nothing here relies on device
order. The NVLink clique is not a device attribute: GPU Feature Discovery's node label
``nvidia.com/gpu.clique`` carries it, which the ``gfd`` label scheme reads.

Rules, as the API defines them (``k8s.io/api/resource/v1`` ResourcePool): a pool may span
several slices; only the slices of its highest ``generation`` count (older ones are being
replaced), and fewer slices than ``resourceSliceCount`` means the pool is still being
published. A node's DRA GPUs are the devices of type ``gpu`` in its current pools; MIG and
VFIO devices are other kinds of device and are not whole GPUs. A device tainted ``NoSchedule``
or ``NoExecute`` (device taints) is not counted. v1beta1 slices keep a device's fields under
``basic``; v1beta2 and v1 put them on the device — both are read.

Everything malformed becomes a :class:`~fabricfit.fabric.topology.Diagnostic` (attributed to
the slice) and is skipped; nothing raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from fabricfit.api.constants import DRA_GPU_DRIVER
from fabricfit.fabric.objects import list_at, mapping_at, shorten, str_at, value_at
from fabricfit.fabric.quantity import parse_quantity
from fabricfit.fabric.topology import Diagnostic

GPU_TYPE = "gpu"
ATTRIBUTE_KINDS = ("string", "int", "bool", "version")
BLOCKING_TAINTS = frozenset({"NoSchedule", "NoExecute"})
AttributeValue = str | int | bool


@dataclass(frozen=True, slots=True)
class DraDevice:
    """One device of the GPU driver, in a current pool, on one node."""

    node: str
    pool: str
    name: str
    kind: str  # the "type" attribute: gpu, mig, vfio ("" when absent)
    attributes: Mapping[str, AttributeValue] = field(default_factory=lambda: MappingProxyType({}))
    memory_bytes: int | None = None

    @property
    def is_gpu(self) -> bool:
        return self.kind == GPU_TYPE


@dataclass(frozen=True)
class DraInventory:
    """Every GPU-driver device published for a node, and what was wrong with the input."""

    devices: tuple[DraDevice, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()

    def gpus_by_node(self) -> dict[str, int]:
        """Whole GPUs (devices of type ``gpu``) per node name."""
        counts: dict[str, int] = {}
        for device in self.devices:
            if device.is_gpu:
                counts[device.node] = counts.get(device.node, 0) + 1
        return counts

    def __post_init__(self) -> None:
        # Claims look devices up one by one: index them once.
        object.__setattr__(self, "_nodes", {(d.pool, d.name): d.node for d in self.devices})
        gpus = frozenset((d.pool, d.name) for d in self.devices if d.is_gpu)
        object.__setattr__(self, "_gpus", gpus)

    def node_of(self, pool: str, device: str) -> str | None:
        """The node of ``device`` in ``pool`` (how a claim's allocation result names it)."""
        nodes: dict[tuple[str, str], str] = self._nodes  # type: ignore[attr-defined]
        return nodes.get((pool, device))

    def is_gpu(self, pool: str, device: str) -> bool:
        gpus: frozenset[tuple[str, str]] = self._gpus  # type: ignore[attr-defined]
        return (pool, device) in gpus


@dataclass(frozen=True, slots=True)
class _Slice:
    name: str
    node: str
    pool: str
    generation: int
    count: int
    devices: Sequence[object]


def read_resource_slices(slices: object, driver: str = DRA_GPU_DRIVER) -> DraInventory:
    """The devices of ``driver`` (the GPU driver unless told) in ``slices`` (``items`` of
    ``kubectl get resourceslices``)."""
    diagnostics: list[Diagnostic] = []
    if isinstance(slices, Mapping | str | bytes) or not isinstance(slices, Iterable):
        message = "resource slices is not a list; no DRA devices read"
        return DraInventory(diagnostics=(Diagnostic(node="", message=message, severity="error"),))
    current = _current_slices(_read_slices(slices, driver, diagnostics), diagnostics)
    devices: dict[tuple[str, str], DraDevice] = {}
    for piece in current:
        for raw in piece.devices:
            device = _read_device(raw, piece, driver, diagnostics)
            if device is None:
                continue
            if (piece.pool, device.name) in devices:
                message = f"device {device.name!r} listed twice in pool {piece.pool!r}; first kept"
                diagnostics.append(Diagnostic(node=_where(piece.name), message=message))
                continue
            devices[(piece.pool, device.name)] = device
    ordered = sorted(devices.values(), key=lambda d: (d.node, d.pool, d.name))
    unique = sorted(dict.fromkeys(diagnostics), key=lambda d: (d.node, d.message))
    return DraInventory(devices=tuple(ordered), diagnostics=tuple(unique))


def _read_slices(
    slices: Iterable[object], driver: str, diagnostics: list[Diagnostic]
) -> list[_Slice]:
    found: list[_Slice] = []
    for index, raw in enumerate(slices):
        name = str_at(raw, "metadata", "name") or f"resourceslices[{index}]"
        if not isinstance(raw, Mapping):
            diagnostics.append(_error(name, "is not an object; skipped"))
            continue
        if str_at(raw, "spec", "driver") != driver:
            continue  # another driver's devices (compute-domain.nvidia.com, NICs, ...)
        piece = _read_slice(raw, name, diagnostics)
        if piece is not None:
            found.append(piece)
    return found


def _read_slice(
    raw: Mapping[str, object], name: str, diagnostics: list[Diagnostic]
) -> _Slice | None:
    node = str_at(raw, "spec", "nodeName")
    if not node:
        why = "is not local to one node (no spec.nodeName)"
        diagnostics.append(_error(name, f"{why}; its devices are not counted on any node"))
        return None
    pool = str_at(raw, "spec", "pool", "name")
    generation = _whole(value_at(raw, "spec", "pool", "generation"))
    count = _whole(value_at(raw, "spec", "pool", "resourceSliceCount"))
    if not pool or generation is None or count is None or count < 1:
        what = "spec.pool needs a name, a whole generation and a resourceSliceCount of at least 1"
        diagnostics.append(_error(name, f"{what}; skipped"))
        return None
    return _Slice(name, node, pool, generation, count, list_at(raw, "spec", "devices"))


def _current_slices(slices: list[_Slice], diagnostics: list[Diagnostic]) -> list[_Slice]:
    """The slices of each pool's newest generation, with a note when a pool is incomplete."""
    newest: dict[str, int] = {}
    for piece in slices:
        newest[piece.pool] = max(newest.get(piece.pool, piece.generation), piece.generation)
    current = [p for p in slices if p.generation == newest[p.pool]]
    for pool in sorted(newest):
        pieces = [p for p in current if p.pool == pool]
        nodes = sorted({p.node for p in pieces})
        expected = max(p.count for p in pieces)
        if len(pieces) < expected:
            message = (
                f"pool {pool!r} generation {newest[pool]} has {len(pieces)} of {expected} "
                "slices (still being published); counting the devices listed"
            )
            diagnostics.append(Diagnostic(node=nodes[0], message=message))
        if len(nodes) > 1:
            message = f"pool {pool!r} spans nodes {nodes}; each slice counts on its own node"
            diagnostics.append(Diagnostic(node=nodes[0], message=message))
    return current


def _read_device(
    raw: object, piece: _Slice, driver: str, diagnostics: list[Diagnostic]
) -> DraDevice | None:
    name = str_at(raw, "name")
    if not name:
        diagnostics.append(_error(piece.name, "a device has no name; skipped"))
        return None
    fields = mapping_at(raw, "basic") if "basic" in mapping_at(raw) else mapping_at(raw)
    attributes = _read_attributes(
        mapping_at(fields, "attributes"), name, piece, driver, diagnostics
    )
    kind = attributes.get("type")
    gpu_driver = driver == DRA_GPU_DRIVER
    if not isinstance(kind, str):
        if gpu_driver:
            message = f"device {name!r} has no string attribute 'type'; not counted as a GPU"
            diagnostics.append(Diagnostic(node=_where(piece.name), message=message))
        kind = ""
    taint = _blocking_taint(list_at(fields, "taints"))
    if taint is not None and (kind == GPU_TYPE or not gpu_driver):
        message = f"device {name!r} is tainted {taint}; not counted"
        diagnostics.append(Diagnostic(node=piece.node, message=message))
        return None
    memory = _capacity_bytes(mapping_at(fields, "capacity").get("memory"))
    return DraDevice(
        node=piece.node,
        pool=piece.pool,
        name=name,
        kind=kind,
        attributes=MappingProxyType(attributes),
        memory_bytes=memory,
    )


def _read_attributes(
    raw: Mapping[str, object],
    device: str,
    piece: _Slice,
    driver: str,
    diagnostics: list[Diagnostic],
) -> dict[str, AttributeValue]:
    """Attribute name -> value; a name in the driver's own domain loses the domain prefix."""
    found: dict[str, AttributeValue] = {}
    for key in sorted(k for k in raw if isinstance(k, str)):
        value = _attribute_value(raw[key])
        if value is None:
            message = f"device {device!r}: attribute {shorten(key)} has no single typed value"
            diagnostics.append(Diagnostic(node=_where(piece.name), message=f"{message}; ignored"))
            continue
        found[key.removeprefix(driver + "/")] = value
    return found


def _attribute_value(raw: object) -> AttributeValue | None:
    """The value of a DeviceAttribute: exactly one of string, int, bool, version."""
    if not isinstance(raw, Mapping):
        return None
    present = [k for k in ATTRIBUTE_KINDS if k in raw]
    if len(present) != 1:
        return None
    value = raw[present[0]]
    if present[0] == "int":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if present[0] == "bool":
        return value if isinstance(value, bool) else None
    return value if isinstance(value, str) else None


def _capacity_bytes(raw: object) -> int | None:
    """A DeviceCapacity (``{value: 80Gi}``; v1alpha3 wrote the bare quantity) in bytes."""
    text = value_at(raw, "value") if isinstance(raw, Mapping) else raw
    if isinstance(text, int) and not isinstance(text, bool):
        return text if text >= 0 else None
    quantity = parse_quantity(text) if isinstance(text, str) else None
    if quantity is None or quantity < 0:
        return None
    return int(quantity)


def _blocking_taint(taints: Sequence[object]) -> str | None:
    for taint in taints:
        effect = str_at(taint, "effect")
        if effect in BLOCKING_TAINTS:
            return f"{(str_at(taint, 'key') or '?')[:63]}:{effect}"
    return None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _where(slice_name: str) -> str:
    return f"resourceslice {slice_name}"


def _error(slice_name: str, message: str) -> Diagnostic:
    return Diagnostic(node=_where(slice_name), message=message, severity="error")
