"""A platform's NCCL set-up as profile data: which algorithms and protocols NCCL may run.

Theory of operation
-------------------
Cloud platforms ship an NCCL environment with their network stack (GCP's GPUDirect-TCPXO
``nccl-env-profile.sh``, an EFA plugin's defaults): ``NCCL_ALGO`` and ``NCCL_PROTO`` restrict the
(algorithm, protocol) pairs NCCL's tuner may choose from, ``NCCL_NVLS_ENABLE=0`` turns NVLink
SHARP off. NCCL applies them as a mask: disabled entries of its tuning table get bandwidth 0
and are never chosen (``src/graph/tuning.cc`` 453-462, 537-538 @5067397c; ``NCCL_NVLS_ENABLE=0``
leaves ``nvlsSupport`` 0, ``src/transport/nvls.cc`` 262, so neither NVLS nor NVLS-tree runs).

A profile field takes a list of NCCL's names or NCCL's own string (``"Simple,LL128"``,
``"^LL128"``), matched case-insensitively as NCCL's ``parseList`` does (tuning.cc 55);
per-collective lists (``"allreduce:tree;..."``) are not supported. Values are stored as NCCL's
canonical names in NCCL's order, so equal set-ups compare equal. ``nccl_version`` names the
NCCL release the platform runs (``"2.26.2"``): NCCL's tuner constants change between releases,
and the model's choice follows the release's (:mod:`fabricfit.cost.nccl`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

# NCCL 2.30.7's names (src/init.cc 53-55 @5067397c), in NCCL's order.
NCCL_ALGORITHMS: Final = (
    "Tree",
    "Ring",
    "CollNetDirect",
    "CollNetChain",
    "NVLS",
    "NVLSTree",
    "PAT",
)
NCCL_PROTOCOLS: Final = ("LL", "LL128", "Simple")
# The model's name of each NCCL algorithm it prices (CollNet is not modelled).
MODEL_ALGORITHM: Final = {
    "Tree": "tree",
    "Ring": "ring",
    "NVLS": "nvls",
    "NVLSTree": "nvls-tree",
    "PAT": "pat",
}


class NcclSetupError(ValueError):
    """A value NCCL would not accept, or one no collective could run with (one line)."""


def parse_names(key: str, value: object, names: Sequence[str]) -> tuple[str, ...]:
    """The names ``value`` enables, NCCL's way: a list of names, or NCCL's comma-separated
    string where a leading ``^`` enables every name except those listed."""
    if isinstance(value, str):
        if ";" in value or ":" in value:
            raise NcclSetupError(
                f"profile field {key!r}: per-collective lists (';', ':') are not supported, "
                f"got {value!r}"
            )
        negate = value.startswith("^")
        items: list[object] = [t.strip() for t in value.removeprefix("^").split(",")]
    elif isinstance(value, list):
        negate, items = False, list(value)
    else:
        raise NcclSetupError(
            f"profile field {key!r} must be a list of names or NCCL's string, got {value!r}"
        )
    listed = {_canonical(key, item, names) for item in items}
    enabled = tuple(n for n in names if (n in listed) != negate)
    if not enabled:
        raise NcclSetupError(f"profile field {key!r} enables nothing, got {value!r}")
    return enabled


def _canonical(key: str, item: object, names: Sequence[str]) -> str:
    for name in names:
        if isinstance(item, str) and item.lower() == name.lower():
            return name
    raise NcclSetupError(
        f"profile field {key!r}: unknown name {item!r} (one of {', '.join(names)})"
    )


def parse_algorithms(value: object) -> tuple[str, ...]:
    """``nccl_algorithms``: Ring must stay enabled, it is the only algorithm NCCL has for
    broadcast and reduce and for reduce-scatter/all-gather across nodes of several GPUs (NCCL
    fails those calls with ncclInvalidUsage otherwise, enqueue.cc 2063-2065)."""
    enabled = parse_names("nccl_algorithms", value, NCCL_ALGORITHMS)
    if "Ring" not in enabled:
        raise NcclSetupError(
            "profile field 'nccl_algorithms' must enable Ring (NCCL has no other algorithm "
            f"for broadcast and reduce), got {value!r}"
        )
    return enabled


def parse_protocols(value: object) -> tuple[str, ...]:
    """``nccl_protocols``: any non-empty set (every collective has a ring in every protocol)."""
    return parse_names("nccl_protocols", value, NCCL_PROTOCOLS)


_RELEASE = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})")


def parse_version(value: object) -> str:
    """``nccl_version``: an NCCL release, MAJOR.MINOR.PATCH as NCCL prints it ("2.26.2")."""
    if not isinstance(value, str) or not _RELEASE.fullmatch(value.strip()):
        raise NcclSetupError(
            f"profile field 'nccl_version' must be an NCCL release like \"2.26.2\" (quoted), "
            f"got {value!r}"
        )
    return value.strip()


@lru_cache(maxsize=64)
def release(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a release :func:`parse_version` accepted."""
    found = _RELEASE.fullmatch(version)
    if found is None:
        raise NcclSetupError(f"not an NCCL release: {version!r}")
    major, minor, patch = (int(g) for g in found.groups())
    return major, minor, patch
