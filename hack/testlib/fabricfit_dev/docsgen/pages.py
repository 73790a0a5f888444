"""Which generated page comes from which renderer."""

from __future__ import annotations

from collections.abc import Callable

from fabricfit_dev import paths
from fabricfit_dev.docsgen import chart, cli, crd, metrics, model

ROOT = paths.REPO
PAGES: dict[str, Callable[[], str]] = {
    "docs/reference/trainingtopology.md": crd.render_page,
    "docs/reference/cli.md": cli.render_page,
    "docs/reference/metrics.md": metrics.render_page,
    "docs/reference/values.md": chart.render_values_page,
    "docs/reference/rbac.md": chart.render_rbac_page,
    "docs/reference/labels.md": model.render_labels_page,
    "docs/reference/conditions.md": model.render_conditions_page,
}
#: Pages rendered with the helm binary (``hack/cluster build`` caches it).
NEEDS_HELM = frozenset({"docs/reference/rbac.md"})


def stale(paths: list[str]) -> list[str]:
    """The pages among ``paths`` whose file differs from what the code renders now."""
    return [
        path
        for path in paths
        if not (ROOT / path).exists() or (ROOT / path).read_text(encoding="utf-8") != PAGES[path]()
    ]
