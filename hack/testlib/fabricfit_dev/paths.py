"""Where the checkout's files are. The test library is installed editable from ``hack/testlib``,
so the checkout is the third folder above this package; everything that reads a file of the
repository (the CRDs, the pinned versions, the test fixtures, ``hack/cluster``) starts here."""

from __future__ import annotations

from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[3]
HACK: Final = REPO / "hack"
CLUSTER_SCRIPT: Final = HACK / "cluster"
CRDS: Final = REPO / "crds"
FIXTURES: Final = REPO / "tests" / "fixtures"
