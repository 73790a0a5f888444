"""The repository documents itself: no reference to notes outside the tree, and the
architecture page names modules that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "operator" / "fabricfit"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# Notes the project was built from live outside the repository; nothing may point at them.
OUTSIDE = re.compile(r"\bdesign\.md\b|\breference/[\w-]+\.md\b|\bstyle\.md\b")


def texts() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    for folder in ("operator", "tests", "benchmarks", "hack", "charts"):
        found += [p for p in (ROOT / folder).rglob("*") if p.suffix in {".py", ".md", ".yaml"}]
    return [p for p in found if p.is_file() and p != Path(__file__).resolve()]


def test_nothing_points_at_notes_outside_the_repository() -> None:
    dangling = [
        f"{p.relative_to(ROOT)}: {m.group(0)}"
        for p in texts()
        for m in OUTSIDE.finditer(p.read_text(errors="replace"))
    ]
    assert dangling == []


@pytest.mark.parametrize(
    "module", sorted(set(re.findall(r"`(\w+/[\w/]*\w(?:\.py)?/?)`", ARCHITECTURE.read_text())))
)
def test_the_architecture_page_names_real_modules(module: str) -> None:
    candidates = [PACKAGE / module, ROOT / module, ROOT / "tests" / module.removeprefix("tests/")]
    assert any(c.exists() for c in candidates), module
