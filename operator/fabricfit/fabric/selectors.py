"""Whether a DRA device satisfies CEL selectors, as kube-scheduler's allocator checks (pure).

Theory of operation
-------------------
A DeviceClass (``spec.selectors``) and a claim's request (``exactly.selectors``) narrow the
devices a claim may get with CEL expressions over one variable, ``device``: its ``driver``, its
``attributes`` and ``capacity`` as maps per domain (``device.attributes["dra.net"].rdma``; an
attribute written without a domain belongs to the driver's), and ``allowMultipleAllocations``
(k8s.io/dynamic-resource-allocation ``cel/compile.go``). When fabricfit allocates a claim
itself no one else checks them (the API server does not; the scheduler skips allocated
claims), so every device it chooses must pass them here first.

The expressions run under cel-python with ``device`` built the same way. Version attributes
become plain strings: an expression that needs Kubernetes' CEL library (``semver``,
``isGreaterThan``, quantities) cannot be evaluated here, and the answer is ``None`` — "cannot
tell", which callers turn into "fabricfit does not enforce this choice", never a guess. A
lookup of an attribute the device lacks fails in Kubernetes too: that device does not match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from fabricfit.fabric.resourceslices import DraDevice


def device_matches(expressions: Iterable[str], driver: str, device: DraDevice) -> bool | None:
    """True when ``device`` of ``driver`` passes every expression, False when one rejects it,
    None when one cannot be evaluated here (see the module doc)."""
    # Imported here: about 0.1 s, and only device-exact planning needs it.
    from celpy import CELEvalError, json_to_cel  # type: ignore[attr-defined]
    from celpy.celtypes import BoolType

    activation = {"device": json_to_cel(device_variable(driver, device))}
    for expression in expressions:
        program = _program(expression)
        if program is None:
            return None
        try:
            result = program.evaluate(activation)
        except CELEvalError as err:
            if _missing_member(err):
                return False  # an attribute the device lacks: no match, as in Kubernetes
            return None
        if not isinstance(result, bool | BoolType):
            return None
        if not bool(result):
            return False
    return True


def device_variable(driver: str, device: DraDevice) -> dict[str, Any]:
    """The ``device`` variable of DRA's CEL environment, as plain data."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.attributes.items():
        domain, _, short = name.rpartition("/")
        attributes.setdefault(domain or driver, {})[short] = value
    capacity: dict[str, dict[str, Any]] = {}
    if device.memory_bytes is not None:
        capacity[driver] = {"memory": device.memory_bytes}
    return {
        "driver": driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": False,
    }


@lru_cache(maxsize=256)
def _program(expression: str) -> Any:
    """The compiled expression (a celpy Runner), None when it does not compile here."""
    from celpy import Environment

    env = Environment()
    try:
        return env.program(env.compile(expression))
    except Exception:  # any failure to compile means: cannot evaluate here
        return None


def _missing_member(err: Exception) -> bool:
    args: tuple[object, ...] = getattr(err, "args", ())
    return len(args) >= 2 and args[1] is KeyError and "no such member" in str(args[0])


def selectors_of(obj: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The CEL expressions of a ``selectors`` list (a DeviceClass spec or an exact request)."""
    found: list[str] = []
    for selector in (obj or {}).get("selectors") or []:
        cel = selector.get("cel") if isinstance(selector, Mapping) else None
        expression = cel.get("expression") if isinstance(cel, Mapping) else None
        if isinstance(expression, str):
            found.append(expression)
    return tuple(found)
