"""The repository documents itself: the docs site builds strictly, its generated reference pages
match the code, every command it shows runs, every path and module it names exists, and nothing
points at notes outside the tree."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fabricfit.api.conditions import Reason, Severity
from unit.doclinks import ROOT, broken_links, code_blocks, strip_code

PACKAGE = ROOT / "operator" / "fabricfit"
DOCS = ROOT / "docs"
ARCHITECTURE = DOCS / "architecture.md"
PAGES = sorted(DOCS.rglob("*.md"))
# Notes the project was built from live outside the repository; nothing may point at them.
# (docs/reference/ pages of the site are in the tree, so links to them are fine.)
OUTSIDE = re.compile(r"\bdesign\.md\b|\breference/([\w-]+\.md)\b|\bstyle\.md\b")
#: Commands a page shows that need a cluster (the e2e suite runs those paths).
NEEDS_CLUSTER = ("run", "release")
OFFLINE = ("plan", "cost", "inspect", "calibrate", "simulate")


def texts() -> list[Path]:
    found = [ROOT / "README.md", *PAGES]
    for folder in ("operator", "tests", "benchmarks", "hack", "charts"):
        found += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".md", ".yaml"}]
    return [p for p in found if p.is_file() and p != Path(__file__).resolve()]


def test_nothing_points_at_notes_outside_the_repository() -> None:
    dangling = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in texts()
        for m in OUTSIDE.finditer(p.read_text(errors="replace"))
        if not (m.group(1) and (DOCS / "reference" / m.group(1)).is_file())
    ]
    assert dangling == []


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """mkdocs --strict: every page in the nav, every link and anchor resolves."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "reference" / "trainingtopology" / "index.html").is_file()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def shown_commands() -> list[tuple[str, str]]:
    """(page, command) of every ``fabricfit`` line in a ``sh`` block of the README and docs."""
    found = []
    for page in [ROOT / "README.md", *PAGES]:
        for block in code_blocks(page.read_text(encoding="utf-8"), "sh"):
            for line in block.splitlines():
                command = line.split("  #")[0].strip().removeprefix(".venv/bin/")
                if command.startswith("fabricfit ") and " - " not in f"{command} ":
                    found.append((str(page.relative_to(ROOT)), command))
    return found


def test_every_offline_subcommand_is_shown() -> None:
    shown = {shlex.split(command)[1] for _, command in shown_commands()}
    assert set(OFFLINE) <= shown


@pytest.mark.parametrize(
    ("page", "command"),
    [c for c in shown_commands() if shlex.split(c[1])[1] not in NEEDS_CLUSTER],
    ids=lambda value: value if "/" in value and " " not in value else None,
)
def test_every_command_shown_runs(page: str, command: str) -> None:
    argv = [sys.executable, "-m", "fabricfit", *shlex.split(command)[1:]]
    result = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300,
                            check=False)  # fmt: skip
    assert result.returncode == 0, f"{page}: {command}\n{result.stderr}"
    assert result.stdout.strip()


def test_cluster_commands_shown_parse() -> None:
    """``fabricfit run|release`` lines need a cluster to run; their flags must still parse."""
    from fabricfit_dev.docsgen.cli import parser_of

    for page, command in shown_commands():
        argv = shlex.split(command)
        if argv[1] in NEEDS_CLUSTER:
            parser_of(argv[1]).parse_args(argv[2:])  # exits 2 on an unknown flag
            assert page


#: Kubernetes subresources, which docs name as ``<plural>/<subresource>`` in RBAC prose.
SUBRESOURCES = frozenset({"status", "scale", "binding", "eviction", "log"})


def named_paths(page: Path) -> list[str]:
    """Repository paths and package modules a page names in code spans."""
    text = strip_code(page.read_text(encoding="utf-8"))
    spans = re.findall(r"`([^`\s]+)`", text)
    return [s for s in spans if re.fullmatch(r"[\w.-]+(/[\w.*-]+)+/?|fabricfit(\.\w+)+", s)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_paths_and_modules_a_page_names_exist(page: Path) -> None:
    missing = []
    for name in named_paths(page):
        if "*" in name or re.match(r"^[\w.-]+\.(dev|io|run|com|cloud|aws)\b", name):
            continue  # label keys, API groups, globs
        if name.rsplit("/", 1)[-1] in SUBRESOURCES:
            continue  # an API resource's subresource (Kueue's `workloads/status`), not a path
        if name.startswith("fabricfit."):
            if _names_a_package_module(name) and not _module_or_attribute(name):
                missing.append(name)
            continue
        candidates = [ROOT / name, PACKAGE / name, ROOT / "tests" / name, ROOT / "hack" / name]
        if not any(c.exists() for c in candidates) and _looks_like_a_path(name):
            missing.append(name)
    assert missing == []


def _looks_like_a_path(name: str) -> bool:
    """A path into this repository or the package (not another project's, cited by name)."""
    first = name.split("/", 1)[0]
    return first in {p.name for p in ROOT.iterdir()} | {p.name for p in PACKAGE.iterdir()}


def _names_a_package_module(dotted: str) -> bool:
    """``fabricfit.<subpackage or module>…`` (not a chart template name such as
    ``fabricfit.namespacedRules``)."""
    first = dotted.split(".")[1]
    return (PACKAGE / first).is_dir() or (PACKAGE / f"{first}.py").is_file()


def _module_or_attribute(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            target: object = importlib.import_module(module)
            for attribute in parts[cut:]:
                if not hasattr(target, attribute):
                    return False
                target = getattr(target, attribute)
            return True
    return False


def test_every_warning_reason_has_a_troubleshooting_entry() -> None:
    page = (DOCS / "operations" / "troubleshooting.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### `(\w+)`$", page, flags=re.M))
    warnings = {r.value for r in Reason if r.severity == Severity.WARNING}
    assert warnings - headings == set()
    assert headings - {r.value for r in Reason} == set()


@pytest.mark.parametrize(
    "module", sorted(set(re.findall(r"`(\w+/[\w/]*\w(?:\.py)?/?)`", ARCHITECTURE.read_text())))
)
def test_the_architecture_page_names_real_modules(module: str) -> None:
    candidates = [PACKAGE / module, ROOT / module, ROOT / "tests" / module.removeprefix("tests/")]
    assert any(c.exists() for c in candidates), module


def generated(helm: bool) -> list[str]:
    from fabricfit_dev.docsgen.pages import NEEDS_HELM, PAGES

    return [path for path in PAGES if (path in NEEDS_HELM) == helm]


@pytest.mark.parametrize("path", generated(helm=False))
def test_generated_reference_page_is_current(path: str) -> None:
    from fabricfit_dev.docsgen.pages import stale

    assert stale([path]) == [], f"{path} is stale: run `make docs-ref`"


@pytest.mark.tools
@pytest.mark.parametrize("path", generated(helm=True))
def test_generated_page_helm_renders_is_current(path: str) -> None:
    from fabricfit_dev.docsgen.pages import stale

    assert stale([path]) == [], f"{path} is stale: run `make docs-ref`"


def test_a_stale_page_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    from fabricfit_dev.docsgen import pages

    path = generated(helm=False)[0]
    monkeypatch.setitem(pages.PAGES, path, lambda: "# changed\n")
    assert pages.stale([path]) == [path]


def test_the_architecture_page_names_every_package_and_how_to_extend_it() -> None:
    """Every package of ``fabricfit`` has its row in the layers table, and each extension
    point has its how-to."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    rows = set(re.findall(r"^\| `(\w+)(?:\.py)?` \|", text, flags=re.M))
    assert packages <= rows, f"packages missing from the layers table: {packages - rows}"
    howtos = set(re.findall(r"^### (A .+)$", text, flags=re.M))
    wanted = {
        "A workload kind",
        "A label scheme",
        "A fabric preset",
        "A scoring plugin",
        "A CLI verb",
        "A metric",
    }
    assert wanted <= howtos, wanted - howtos
