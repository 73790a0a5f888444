"""Unit tests that run real external tools carry the ``tools`` marker.

``make unit`` deselects them, so it needs neither Go (helm is built by ``hack/cluster build``)
nor promtool (``hack/tools.sh``); ``make test`` runs them. They are the chart tests (helm
renders the chart; the Dockerfile test needs only hadolint from the venv, so it stays) and
every test named ``test_promtool_*``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
NEEDS_HELM = (HERE / "chart" / "test_chart.py", HERE / "chart" / "test_monitoring_assets.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path in NEEDS_HELM or item.name.startswith("test_promtool_"):
            item.add_marker(pytest.mark.tools)
