"""The fabric profiles a process knows: the presets plus custom profile files (pure).

Theory of operation
-------------------
A custom profile is a YAML document of the preset schema (:mod:`fabricfit.fabric.profiles`).
It reaches fabricfit as a file: ``--fabric-file`` on ``fabricfit cost`` and ``plan``, or a
directory of files (``fabricfit run --fabric-dir``, which the chart fills from a ConfigMap built
from ``values.yaml`` ``fabricProfiles``). The shell reads the bytes; this module only parses
``(path, text)`` pairs, so it stays pure and the CLI and the operator share every rule:

* a profile's name is its ``name`` field; a custom profile may not reuse a preset's name (the
  CLI and the operator would then price the same name differently) nor another file's;
* a file that does not load is refused with the file, the field and the reason in one line
  (:class:`CatalogError`). The CLI stops on it (exit 2); the operator keeps running and records
  it under the file's stem, so a job whose fabric names it gets ``Planned=False``/
  ``InvalidFabric`` with that line instead of an anonymous "unknown profile";
* :func:`dump_profile` writes the preset schema back (what ``fabricfit calibrate`` outputs),
  and what it writes loads again to an equal profile.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

import yaml

from fabricfit.fabric.names import unknown_name
from fabricfit.fabric.profiles import PRESETS, FabricProfile, ProfileError, load_profile

PROFILE_SUFFIXES = (".yaml", ".yml")
MAX_PROFILE_BYTES = 1 * 2**20
MAX_SHOWN_NAMES = 24


class CatalogError(ProfileError):
    """A profile file that cannot be used: ``FILE: reason`` on one line."""


@dataclass(frozen=True)
class Catalog:
    """Profiles by name (presets first), where custom ones came from, and files refused."""

    profiles: Mapping[str, FabricProfile] = field(default_factory=lambda: PRESETS)
    origins: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # file stem -> the one-line reason the file was refused (operator only; the CLI stops)
    refused: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def get(self, name: str) -> FabricProfile:
        """The profile called ``name``; CatalogError/ProfileError saying why there is none."""
        profile = self.profiles.get(name)
        if profile is not None:
            return profile
        if name in self.refused:
            raise CatalogError(self.refused[name])
        raise ProfileError(unknown_name("fabric profile", name, self.profiles, self.known()))

    def __contains__(self, name: object) -> bool:
        return name in self.profiles

    def known(self) -> str:
        """The names one can use, for messages: presets, then custom profiles."""
        presets = [n for n in sorted(self.profiles) if n in PRESETS]
        custom = [n for n in sorted(self.profiles) if n not in PRESETS]
        text = f"presets: {', '.join(presets)}"
        if custom:
            shown = custom[:MAX_SHOWN_NAMES] + (["..."] if len(custom) > MAX_SHOWN_NAMES else [])
            text += f"; custom: {', '.join(shown)}"
        return text


def parse_profile_file(text: str, path: str) -> FabricProfile:
    """The profile in file ``path`` (its text); CatalogError naming the file otherwise."""
    if len(text) > MAX_PROFILE_BYTES:
        raise CatalogError(f"profile file {path}: larger than {MAX_PROFILE_BYTES // 2**20} MiB")
    try:
        return load_profile(text)
    except ProfileError as err:
        raise CatalogError(f"profile file {path}: {err}") from None


def build_catalog(
    files: Iterable[tuple[str, str]], *, strict: bool = True, base: Catalog | None = None
) -> Catalog:
    """``base`` (the presets) plus the profiles in ``files`` (``(path, text)`` pairs).

    ``strict`` (the CLI): the first bad file raises CatalogError. Otherwise (the operator) a bad
    file is kept in ``refused`` under its stem and the others still load."""
    start = base or Catalog()
    profiles, origins = dict(start.profiles), dict(start.origins)
    refused = dict(start.refused)
    for path, text in files:
        try:
            profile = parse_profile_file(text, path)
            _check_name(profile.name, path, origins)
        except CatalogError as err:
            if strict:
                raise
            refused[file_stem(path)] = str(err)
            continue
        profiles[profile.name] = profile
        origins[profile.name] = path
    return Catalog(
        profiles=MappingProxyType(profiles),
        origins=MappingProxyType(origins),
        refused=MappingProxyType({k: v for k, v in refused.items() if k not in profiles}),
    )


def _check_name(name: str, path: str, origins: Mapping[str, str]) -> None:
    if name in PRESETS:
        raise CatalogError(
            f"profile file {path}: field 'name': {name!r} is a preset's name; "
            "a custom profile needs a name of its own"
        )
    if name in origins:
        raise CatalogError(
            f"profile file {path}: field 'name': {name!r} is also the name of {origins[name]}"
        )


def file_stem(path: str) -> str:
    """``/etc/fabricfit/fabrics/my-h100.yaml`` -> ``my-h100``."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in PROFILE_SUFFIXES:
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def is_profile_file(name: str) -> bool:
    """Whether a directory entry is a profile file: ``*.yaml``/``*.yml``, not hidden (a
    ConfigMap volume also holds ``..data`` and timestamped ``..2025_…`` entries)."""
    return not name.startswith(".") and name.endswith(PROFILE_SUFFIXES)


# The preset files' key order: identity, scale-up, scale-out, latencies, the rest.
_ORDER = tuple(f.name for f in fields(FabricProfile) if f.name != "_hash")


def profile_document(profile: FabricProfile) -> dict[str, Any]:
    """``profile`` as the mapping of a preset file (defaults written out too)."""
    doc: dict[str, Any] = {}
    for key in _ORDER:
        value = getattr(profile, key)
        if key == "torus":
            if value is not None:
                doc[key] = {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
            continue
        if (key == "description" and not value) or value is None:  # None: an unset NCCL setting
            continue
        doc[key] = _plain(value)
    return doc


def _plain(value: object) -> object:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return float(value)
    return value


def dump_profile(profile: FabricProfile, header: str = "") -> str:
    """YAML text of the preset schema that :func:`parse_profile_file` reads back equal."""
    body = yaml.safe_dump(profile_document(profile), sort_keys=False, allow_unicode=True, width=100)
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    return "\n".join([*lines, body]) if lines else body
