"""Kubernetes resource quantities, as far as counting GPUs needs them (pure).

Theory of operation
-------------------
The API server stores quantities as strings in canonical form ("8"), but hand-edited dumps and
other tools produce "8.0", "8e0", 8 (a YAML int) or garbage. A quantity is parsed exactly with
:class:`decimal.Decimal` (no float rounding), then accepted as a GPU count only when it is a
whole number in ``[0, MAX_GPUS_PER_NODE]``; anything else yields 0 GPUs and a problem string, so a
single bad node never takes the snapshot down and never invents capacity.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from fabricfit.api.models import MAX_GPUS_PER_NODE
from fabricfit.fabric.objects import shorten

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,4})?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(text: str) -> Decimal | None:
    """The exact value of a Kubernetes quantity string, or None when it is not one."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    try:
        number = Decimal(match.group("number"))
    except InvalidOperation:  # pragma: no cover - the regex admits only valid decimals
        return None
    suffix = match.group("suffix") or ""
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    if suffix:
        return number.scaleb(int(suffix[1:]))
    return number


def parse_gpu_count(value: object) -> tuple[int, str | None]:
    """(GPU count, problem) for a quantity from ``allocatable`` or a container's resources.

    Absent means 0 without a problem; anything unusable means 0 with a problem.
    """
    if value is None:
        return 0, None
    if isinstance(value, bool):
        return 0, f"quantity {_shorten(value)} is not a number"
    if isinstance(value, int):
        exact: Decimal | None = Decimal(value)
    elif isinstance(value, float):
        exact = Decimal(repr(value)) if math.isfinite(value) else None
    elif isinstance(value, str):
        exact = parse_quantity(value)
    else:
        exact = None
    if exact is None:
        return 0, f"quantity {_shorten(value)} is not a Kubernetes quantity"
    if exact < 0:
        return 0, f"quantity {_shorten(value)} is negative"
    if exact != exact.to_integral_value():
        return 0, f"quantity {_shorten(value)} is not a whole number of GPUs"
    if exact > MAX_GPUS_PER_NODE:
        return 0, f"quantity {_shorten(value)} exceeds {MAX_GPUS_PER_NODE} GPUs"
    return int(exact), None


def _shorten(value: object) -> str:
    return shorten(value)


#: Byte units with a ``B`` (case-insensitive, as people type them): decimal and binary.
BYTE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
    "PIB": 2**50,
}
_BYTES = re.compile(r"^(?P<number>[0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*(?P<unit>[KMGTP]i?B|B)$", re.I)
MAX_SIZE_TEXT = 64


def parse_size_bytes(text: str, most: int) -> tuple[int | None, str]:
    """(bytes, problem) for a size: a number with B, KB, MB, GB, TB, KiB, MiB, GiB, TiB (any
    case), or a Kubernetes quantity (``1Gi``, ``512Mi``, ``1G``, ``1e9``). Fractions round to
    the nearest byte; the result must lie in ``[1, most]``. Exact (no float): a size with
    hundreds of digits is refused, not overflowed."""
    stripped = text.strip()
    if len(stripped) > MAX_SIZE_TEXT:
        return None, f"is longer than {MAX_SIZE_TEXT} characters"
    match = _BYTES.match(stripped)
    if match is not None:
        exact: Decimal | None = (
            Decimal(match.group("number")) * BYTE_UNITS[match.group("unit").upper()]
        )
    else:
        exact = parse_quantity(stripped)
    if exact is None:
        return None, (
            "is not a size: use a number with B, KB, MB, GB, KiB, MiB, GiB, or a Kubernetes "
            "quantity such as 1Gi, 512Mi, 1G or 1e9"
        )
    size = exact.to_integral_value()
    if not 1 <= size <= most:
        return None, f"must be between 1 byte and {most:,} bytes"
    return int(size), ""
