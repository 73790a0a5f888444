"""Shared pytest set-up: make the control-plane harness (hack/) and tests/helpers importable."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# Hypothesis checks that generating examples is fast; on a loaded two-core CI machine that is a
# statement about the machine, not the code, so that health check and the per-example deadline
# are off (each test's own @settings still apply).
settings.register_profile("fabricfit", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("fabricfit")

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT / "hack", ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))
