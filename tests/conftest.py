"""Shared pytest set-up: make the control-plane harness (hack/) and tests/helpers importable."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "hack", ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))
