"""hack/image.sh's refusals: each is one line on stderr, and `make test` goes on without root
(tests/e2e/test_image.py builds and runs the image itself)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "hack" / "image.sh"


def run(*args: str, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    argv = [str(SCRIPT), *args]
    if unprivileged and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("needs setpriv (util-linux) to drop root")
        argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)


def test_an_unknown_argument_is_one_clear_line() -> None:
    result = run("--push")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "hack/image.sh: unknown argument '--push' (expected none, or --skip-unless-root)"
    ]


def test_without_root_make_image_fails_and_make_test_skips_the_image() -> None:
    refused = run(unprivileged=True)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "hack/image.sh: run as root (e.g. sudo make image): buildah's chroot isolation and "
        "mmdebstrap need it"
    ]
    skipped = run("--skip-unless-root", unprivileged=True)
    assert skipped.returncode == 0
    assert skipped.stderr.splitlines() == ["[image] skipped: building the image needs root"]
