"""The functional core stays pure and layers import downward only (docs/architecture.md).

The import contract in ``pyproject.toml`` (``[tool.importlinter]``) states the layers, that the
pure packages import no kopf, Kubernetes client, prometheus_client or aiohttp, and that only
``kube`` talks HTTP to the API server; :func:`test_import_contract` runs it. What import-linter
cannot see is checked here: pure modules import no ``asyncio``, ``os``, ``time`` or ``random``
and read no clock, and the offline commands never load the operator stack.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "operator" / "fabricfit"
PURE = (
    "api",
    "fabric",
    "cost",
    "calibrate",
    "contention",
    "placement",
    "simulation",
    "render",
    "workloads",
    "policy",
)
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


def test_import_contract() -> None:
    """``lint-imports`` (import-linter) keeps every contract of ``pyproject.toml``."""
    linter = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(linter), "--config", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def layer_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


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


#: The REST client's request methods (``fabricfit.kube.rest.Rest``).
REST_CALLS = frozenset({"get", "list", "patch", "create", "watch", "request", "delete", "put"})


def _rest_receiver(node: ast.expr) -> bool:
    """``rest`` or ``<anything>.rest``: the names the client goes by in the shell."""
    if isinstance(node, ast.Name):
        return node.id == "rest"
    return isinstance(node, ast.Attribute) and node.attr == "rest"


@pytest.mark.parametrize(
    "path",
    [p for p in modules() if layer_of(p) not in ("kube", "__init__")],
    ids=lambda p: str(p.relative_to(PACKAGE)),
)
def test_only_kube_calls_the_api_server(path: Path) -> None:
    """Every API call goes through a function of ``kube/``: outside it nobody builds an API
    path (``path_for``) or calls the REST client's request methods."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "fabricfit.kube.rest":
            names = {alias.name for alias in node.names}
            assert "path_for" not in names, f"{path.name} builds API paths outside kube/"
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in REST_CALLS
            and _rest_receiver(node.func.value)
        ):
            raise AssertionError(
                f"{path.name}:{node.lineno} calls the API server around kube/ "
                f"(.{node.func.attr} on the REST client)"
            )
