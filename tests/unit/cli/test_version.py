"""``fabricfit version`` and ``--version``; the build hook that records the commit."""

from __future__ import annotations

import importlib.util
import json
import platform
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
from setuptools import Distribution

from fabricfit import __version__
from fabricfit.cli import version
from fabricfit.cli.main import main

ROOT = Path(__file__).resolve().parents[3]


def _setup_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fabricfit_setup", ROOT / "setup.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not __main__: defines the hook, builds nothing
    return module


def test_text_names_the_versions_and_says_when_no_commit_is_recorded(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(version, "build_commit", lambda: None)
    assert main(["version"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"fabricfit {__version__}",
        f"python {platform.python_version()} ({platform.python_implementation()})",
        "commit not recorded (a source or editable install)",
    ]


def test_json_carries_the_recorded_commit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / version.BUILD_INFO).write_text('{"commit": "0123abc"}\n', encoding="utf-8")
    monkeypatch.setattr(version.resources, "files", lambda _package: tmp_path)
    assert main(["version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "version": __version__,
        "python": platform.python_version(),
        "pythonImplementation": platform.python_implementation(),
        "commit": "0123abc",
    }


@pytest.mark.parametrize("text", ["not json", "[1]", '{"commit": 7}', '{"commit": ""}'])
def test_an_unreadable_record_is_no_commit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str
) -> None:
    (tmp_path / version.BUILD_INFO).write_text(text, encoding="utf-8")
    monkeypatch.setattr(version.resources, "files", lambda _package: tmp_path)
    assert version.build_commit() is None


def test_dash_dash_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"fabricfit {__version__}\n"


def _build(tmp_path: Path) -> Path:
    setup = _setup_module()
    dist = Distribution(
        {"name": "fabricfit", "packages": ["fabricfit"], "package_dir": {"": "operator"}}
    )
    dist.script_name = str(ROOT / "setup.py")
    command = setup.BuildPy(dist)
    command.build_lib = str(tmp_path / "lib")
    command.ensure_finalized()
    command.run()
    return tmp_path / "lib" / "fabricfit" / version.BUILD_INFO


def test_the_build_records_the_commit_it_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("FABRICFIT_COMMIT", "89abcdef0123")
    assert json.loads(_build(tmp_path).read_text()) == {"commit": "89abcdef0123"}


def test_the_build_records_the_checkouts_head(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not head:
        pytest.skip("not a git checkout")
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("FABRICFIT_COMMIT", raising=False)
    commit = json.loads(_build(tmp_path).read_text())["commit"]
    assert commit in (head, f"{head}-dirty")
