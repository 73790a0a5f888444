"""Reading the CLI's input files: bounded in size, regular files (or ``-`` for stdin) only.

A node dump of a 4,096-node cluster is ~20 MiB of JSON; :data:`MAX_INPUT_BYTES` is far above
that and far below what parsing could hold in memory. Devices (``/dev/zero``), FIFOs without a
writer and directories are refused by ``stat`` before anything is opened, so a wrong path costs
microseconds instead of a hang or all the memory; a pipe is read through ``-`` (stdin), cut at
the same bound.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO

from fabricfit.cli.common import UsageError
from fabricfit.fabric.documents import DocumentError, decode_text, load_objects, require_kind

MAX_INPUT_BYTES = 256 * 2**20
MAX_PATH_ECHO = 80
STDIN = "-"


def shown(path: str) -> str:
    """``path`` as messages show it: cut, and with characters the terminal cannot encode
    escaped (a path may hold undecodable bytes, which Python keeps as surrogates)."""
    text = path if len(path) <= MAX_PATH_ECHO else path[: MAX_PATH_ECHO - 3] + "..."
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def read_bytes(path: str, what: str) -> bytes:
    """The bytes of ``path`` (``-``: stdin), refusing what is not a regular file or too big."""
    if path == STDIN:
        return _bounded(sys.stdin.buffer, f"{what} (stdin)")
    name = f"{what} file {shown(path)}"
    try:
        info = Path(path).stat()
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"cannot read {name}: it is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"cannot read {name}: not a regular file (use - to read a pipe)")
        if info.st_size > MAX_INPUT_BYTES:
            raise UsageError(f"cannot read {name}: larger than {_limit()}")
        with Path(path).open("rb") as stream:
            return _bounded(stream, name)
    except (OSError, ValueError) as err:  # ValueError: a NUL byte in the path
        reason = getattr(err, "strerror", None) or "invalid path"
        raise UsageError(f"cannot read {name}: {reason}") from None


def _bounded(stream: BinaryIO, name: str) -> bytes:
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"cannot read {name}: larger than {_limit()}")
    return data


def _limit() -> str:
    mib = MAX_INPUT_BYTES / 2**20
    return f"{mib:g} MiB" if mib >= 1 else f"{MAX_INPUT_BYTES:,} bytes"


def read_objects(path: str, what: str, kind: str | None = None) -> list[dict[str, Any]]:
    """The Kubernetes objects in ``path``; with ``kind``, every one must be of that kind."""
    where = f"{what} file {shown(path)}" if path != STDIN else f"{what} (stdin)"
    try:
        objects = load_objects(decode_text(read_bytes(path, what)))
        return require_kind(objects, kind) if kind is not None else objects
    except DocumentError as err:
        raise UsageError(f"{where}: {err}") from None
