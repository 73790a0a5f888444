"""Build hook: record the git commit a wheel or an image is built from, for ``fabricfit version``.

Everything else about the package is declared in pyproject.toml. The commit is taken from
``FABRICFIT_COMMIT`` (an image build, whose context has no ``.git``) or from ``git`` in the source
tree, with ``-dirty`` when the tree has uncommitted changes, and written to
``fabricfit/build-info.json`` in the built package. An editable install (``make venv``) runs
from the source tree and records nothing: there ``fabricfit version`` says the commit is not
recorded, and never runs git itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUILD_INFO = "build-info.json"
COMMIT = re.compile(r"^[0-9a-f]{7,64}(-dirty)?$")


def source_commit() -> str | None:
    """The commit to record: ``$FABRICFIT_COMMIT``, else the checkout's HEAD, else None."""
    given = os.environ.get("FABRICFIT_COMMIT", "").strip()
    if given:
        return given if COMMIT.match(given) else None
    try:
        head = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None  # no git, or not a checkout (an sdist)
    return head + ("-dirty" if dirty else "") if COMMIT.match(head) else None


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30, check=True
    )
    return done.stdout.strip()


class BuildPy(build_py):
    """``build_py`` that also writes ``fabricfit/build-info.json``."""

    def run(self) -> None:
        super().run()
        commit = source_commit()
        if commit is None or getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "fabricfit" / BUILD_INFO
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps({"commit": commit}) + "\n", encoding="utf-8")


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildPy})
