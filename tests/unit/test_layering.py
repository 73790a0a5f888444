"""The functional core stays pure and layers import downward only (docs/architecture.md).

Pure packages (api, fabric, cost, calibrate, placement, render) import no kopf, Kubernetes client,
prometheus_client or asyncio, read no environment and no clock. Layers: api ← fabric ← cost ←
calibrate ← placement ← render ← kube ← reconcile ← handlers ← cli (``metrics`` sits beside kube).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "fabricfit"
PURE = ("api", "fabric", "cost", "calibrate", "placement", "render")
FORBIDDEN_IN_PURE = (
    "kopf",
    "kubernetes",
    "prometheus_client",
    "asyncio",
    "aiohttp",
    "os",
    "time",
    "random",
)
CLOCK_CALLS = ("now", "utcnow", "today", "time", "monotonic", "perf_counter")
# What each layer may import from fabricfit (besides itself).
ALLOWED: dict[str, set[str]] = {
    "api": set(),
    "fabric": {"api"},
    "cost": {"api", "fabric"},
    "calibrate": {"api", "fabric", "cost"},
    "placement": {"api", "fabric", "cost", "calibrate"},
    "render": {"api", "fabric", "cost", "calibrate", "placement"},
    "metrics": {"api", "fabric", "cost", "calibrate", "placement", "render"},
    "kube": {"api", "fabric", "cost", "calibrate", "placement", "render"},
    "reconcile": {"api", "fabric", "cost", "calibrate", "placement", "render", "kube", "metrics"},
    "handlers": {
        "api",
        "fabric",
        "cost",
        "calibrate",
        "placement",
        "render",
        "kube",
        "metrics",
        "reconcile",
    },
    "cli": {
        "api",
        "fabric",
        "cost",
        "calibrate",
        "placement",
        "render",
        "kube",
        "handlers",
        "metrics",
        "reconcile",
    },
}


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.stem in ALLOWED else ""


def imported_modules(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_layers_import_downward_only(path: Path) -> None:
    layer = layer_of(path)
    if layer not in ALLOWED:
        return
    tree = ast.parse(path.read_text())
    for name in imported_modules(tree):
        parts = name.split(".")
        if parts[0] != "fabricfit" or len(parts) < 2 or parts[1] == layer or parts[1] == "__init__":
            continue
        assert parts[1] in ALLOWED[layer], (
            f"{layer} must not import fabricfit.{parts[1]} ({path.name})"
        )


@pytest.mark.parametrize(
    "path", [p for p in modules() if layer_of(p) in PURE], ids=lambda p: str(p.relative_to(PACKAGE))
)
def test_pure_core_has_no_io_imports_and_no_clock(path: Path) -> None:
    tree = ast.parse(path.read_text())
    for name in imported_modules(tree):
        assert name.split(".")[0] not in FORBIDDEN_IN_PURE, (
            f"pure module {path.name} imports {name}"
        )
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in CLOCK_CALLS
            and isinstance(node.ctx, ast.Load)
        ):
            base = node.value
            base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
            assert base_name not in {"datetime", "date", "time"}, (
                f"pure module {path.name} reads the clock"
            )


@pytest.mark.parametrize("command", ["cost", "plan", "crd", "calibrate"])
def test_offline_commands_do_not_import_the_operator_stack(command: str) -> None:
    code = (
        "import sys\n"
        "from fabricfit.cli import main\n"
        "try:\n"
        f"    main.main(['{command}', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "roots = {'kopf', 'kubernetes', 'prometheus_client'}\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in roots)\n"
        "print('HEAVY=' + ','.join(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "HEAVY=", (
        f"`fabricfit {command}` imported the operator stack"
    )
