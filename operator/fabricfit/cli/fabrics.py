"""Reading custom fabric profiles for the CLI and the operator: ``--fabric-file``, ``--fabric-dir``.

The bytes are read here (bounded, regular files only, through :mod:`fabricfit.cli.inputs`);
parsing and every rule about names live in the pure :mod:`fabricfit.fabric.profiles.catalog`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fabricfit.cli.common import UsageError
from fabricfit.cli.inputs import read_bytes, shown
from fabricfit.fabric.documents import DocumentError, decode_text
from fabricfit.fabric.profiles import FabricProfile
from fabricfit.fabric.profiles.catalog import (
    MAX_PROFILE_BYTES,
    Catalog,
    CatalogError,
    build_catalog,
    file_stem,
    is_profile_file,
)

MAX_PROFILE_FILES = 512


def _text(path: str) -> str:
    data = read_bytes(path, "profile")
    if len(data) > MAX_PROFILE_BYTES:
        raise UsageError(f"profile file {shown(path)}: larger than 1 MiB")
    try:
        return decode_text(data)
    except DocumentError as err:
        raise UsageError(f"profile file {shown(path)}: {err}") from None


def read_profile_files(paths: Sequence[str], base: Catalog | None = None) -> Catalog:
    """The presets plus the profiles in ``paths``; UsageError (exit 2) on the first bad one."""
    try:
        return build_catalog([(shown(p), _text(p)) for p in paths], base=base)
    except CatalogError as err:
        raise UsageError(str(err)) from None


def read_profile_file(path: str) -> FabricProfile:
    """The one profile in ``path`` (``--fabric-file``)."""
    catalog = read_profile_files([path])
    return next(p for n, p in catalog.profiles.items() if catalog.origins.get(n) == shown(path))


def profile_paths(folder: str) -> list[str]:
    """The profile files in ``folder`` (``*.yaml``/``*.yml``, not hidden), sorted."""
    try:
        entries = sorted(e for e in Path(folder).iterdir() if is_profile_file(e.name))
    except OSError as err:
        raise UsageError(f"cannot read fabric directory {shown(folder)}: {err.strerror}") from None
    if len(entries) > MAX_PROFILE_FILES:
        raise UsageError(f"fabric directory {shown(folder)}: more than {MAX_PROFILE_FILES} files")
    return [str(e) for e in entries]


def read_profile_dir(folder: str, *, strict: bool, missing_ok: bool = False) -> Catalog:
    """The presets plus the profiles in ``folder``. ``strict`` (CLI): the first bad file is exit
    2. Otherwise (the operator) bad files are kept in ``refused`` for jobs that name them."""
    if missing_ok and not Path(folder).is_dir():
        return Catalog()
    files: list[tuple[str, str]] = []
    unreadable: dict[str, str] = {}
    for path in profile_paths(folder):
        try:
            files.append((shown(path), _text(path)))
        except UsageError as err:
            if strict:
                raise
            unreadable[file_stem(path)] = str(err)
    try:
        return build_catalog(files, strict=strict, base=Catalog(refused=unreadable))
    except CatalogError as err:
        raise UsageError(str(err)) from None
