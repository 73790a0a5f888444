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
and the model's choice follows the release's (:mod:`fabricfit.cost.nccl`). ``pxn_enabled`` is
PXN for point-to-point traffic across nodes (send/recv, all-to-all): on by default since NCCL
2.12 (``NCCL_PXN_DISABLE`` 0, ``src/graph/paths.cc:668``; ``NCCL_P2P_PXN_LEVEL`` 2,
``src/graph/search.cc:1397-1398`` @5067397c), off with ``NCCL_PXN_DISABLE=1`` or
``NCCL_P2P_PXN_LEVEL=0``; :func:`pxn_active` also turns it off for a release before 2.12.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from fabricfit.fabric.objects import shorten

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
# NCCL_BUFFSIZE values a profile (and a run) may give: 64 KiB to 1 GiB.
BUFFSIZE_RANGE: Final = (1 << 16, 1 << 30)
# The NCCL environment of a measured run that changes what the model prices, as NCCL_DEBUG=INFO
# prints it (subsystem ENV, on by default): "NCCL_ALGO set by environment to Ring" and
# "NCCL_PROTO ..." (tuning.cc:455-460 @5067397c), parameters as "NCCL_NVLS_ENABLE set by
# environment to 0." (misc/param.cc:100).
RUN_ENV_KEYS: Final = (
    "NCCL_ALGO",
    "NCCL_PROTO",
    "NCCL_NVLS_ENABLE",
    "NCCL_BUFFSIZE",
    "NCCL_PXN_DISABLE",
    "NCCL_P2P_PXN_LEVEL",
)
PXN_FROM_RELEASE: Final = (2, 12, 0)  # NCCL 2.12 introduced PXN (NVIDIA's 2.12 release notes)


class NcclSetupError(ValueError):
    """A value NCCL would not accept, or one no collective could run with (one line)."""


def parse_names(
    key: str, value: object, names: Sequence[str], *, subject: str | None = None
) -> tuple[str, ...]:
    """The names ``value`` enables, NCCL's way: a list of names, or NCCL's comma-separated
    string where a leading ``^`` enables every name except those listed. Errors name
    ``subject`` (default: the profile field ``key``)."""
    what = subject or f"profile field {key!r}"
    if isinstance(value, str):
        if ";" in value or ":" in value:
            raise NcclSetupError(
                f"{what}: per-collective lists (';', ':') are not supported, got {shorten(value)}"
            )
        negate = value.startswith("^")
        items: list[object] = [t.strip() for t in value.removeprefix("^").split(",")]
    elif isinstance(value, list):
        negate, items = False, list(value)
    else:
        raise NcclSetupError(
            f"{what} must be a list of names or NCCL's string, got {shorten(value)}"
        )
    listed = {_canonical(what, item, names) for item in items}
    enabled = tuple(n for n in names if (n in listed) != negate)
    if not enabled:
        raise NcclSetupError(f"{what} enables nothing, got {shorten(value)}")
    return enabled


def _canonical(what: str, item: object, names: Sequence[str]) -> str:
    for name in names:
        if isinstance(item, str) and item.lower() == name.lower():
            return name
    raise NcclSetupError(f"{what}: unknown name {shorten(item)} (one of {', '.join(names)})")


def parse_algorithms(value: object) -> tuple[str, ...]:
    """``nccl_algorithms``: Ring must stay enabled, it is the only algorithm NCCL has for
    broadcast and reduce and for reduce-scatter/all-gather across nodes of several GPUs (NCCL
    fails those calls with ncclInvalidUsage otherwise, enqueue.cc 2063-2065)."""
    enabled = parse_names("nccl_algorithms", value, NCCL_ALGORITHMS)
    if "Ring" not in enabled:
        raise NcclSetupError(
            "profile field 'nccl_algorithms' must enable Ring (NCCL has no other algorithm "
            f"for broadcast and reduce), got {shorten(value)}"
        )
    return enabled


def parse_protocols(value: object) -> tuple[str, ...]:
    """``nccl_protocols``: any non-empty set (every collective has a ring in every protocol)."""
    return parse_names("nccl_protocols", value, NCCL_PROTOCOLS)


def run_env_fields(key: str, value: str) -> dict[str, object]:
    """The profile fields a run's ``key=value`` (one of ``RUN_ENV_KEYS``) sets for pricing that
    run: the algorithms or protocols NCCL could choose, NVLS on or off, the Simple buffer.
    Unlike a profile's ``nccl_algorithms``, a run may leave Ring out (``NCCL_ALGO=Tree`` on an
    all-reduce). NcclSetupError (one line) for a value NCCL would not run with."""
    if key == "NCCL_ALGO":
        return {"nccl_algorithms": parse_names(key, value, NCCL_ALGORITHMS, subject=key)}
    if key == "NCCL_PROTO":
        return {"nccl_protocols": parse_names(key, value, NCCL_PROTOCOLS, subject=key)}
    if key not in RUN_ENV_KEYS:
        raise NcclSetupError(f"{key[:40]} is not one of {', '.join(RUN_ENV_KEYS)}")
    number = value.strip().removesuffix(".")
    if not re.fullmatch(r"-?[0-9]{1,12}", number):
        raise NcclSetupError(f"{key} must be an integer, got {value[:40]!r}")
    if key == "NCCL_NVLS_ENABLE":
        return {"nvls_enabled": int(number) != 0}
    if key == "NCCL_PXN_DISABLE":
        return {"pxn_enabled": int(number) != 1}  # paths.cc: ncclPxnDisable(comm) != 1
    if key == "NCCL_P2P_PXN_LEVEL":
        return {"pxn_enabled": int(number) != 0}  # search.cc: level 0, no PXN for p2p
    low, high = BUFFSIZE_RANGE
    if not low <= int(number) <= high:
        raise NcclSetupError(f"{key} must be between {low} and {high} bytes, got {number}")
    return {"nccl_buffsize": int(number)}


def pxn_active(enabled: bool, version: str | None) -> bool:
    """Whether NCCL relays p2p traffic to the peer's rail (PXN): set up so, in a release that
    has it (None: the release the model follows, which does)."""
    return enabled and (version is None or release(version) >= PXN_FROM_RELEASE)


_RELEASE = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})")


def parse_version(value: object) -> str:
    """``nccl_version``: an NCCL release, MAJOR.MINOR.PATCH as NCCL prints it ("2.26.2")."""
    if not isinstance(value, str) or not _RELEASE.fullmatch(value.strip()):
        raise NcclSetupError(
            f"profile field 'nccl_version' must be an NCCL release like \"2.26.2\" (quoted), "
            f"got {shorten(value)}"
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
