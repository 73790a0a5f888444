"""Shared pytest set-up (the test library, fabricfit_dev, is installed in the venv by make venv)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

# Hypothesis checks that generating examples is fast; on a loaded two-core CI machine that is a
# statement about the machine, not the code, so that health check and the per-example deadline
# are off (each test's own @settings still apply).
settings.register_profile("fabricfit", suppress_health_check=[HealthCheck.too_slow], deadline=None)
settings.load_profile("fabricfit")
