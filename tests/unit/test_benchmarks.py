"""Benchmarks use the package and the test library (fabricfit_dev), never the test suite nor the
e2e tests' own building blocks (fabricfit_dev.e2e)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
TEST_ONLY = ("helpers", "unit", "e2e", "tests", "conftest")
E2E_HELPERS = "fabricfit_dev.e2e"


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda p: p.name)
def test_benchmarks_import_no_test_code(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text())):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
        for name in names:
            assert name.split(".")[0] not in TEST_ONLY, f"{path.name} imports {name}"
            assert not name.startswith(E2E_HELPERS), f"{path.name} imports {name}"
