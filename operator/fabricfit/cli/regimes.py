"""How right the model has been where a ``fabricfit cost`` prediction falls: the summary
``benchmarks/cost_accuracy.py --write-regimes`` keeps in the package (``measured-accuracy.json``
of ``fabricfit.calibrate``), read once per process, judged on the rows of the profile's
hardware family (:mod:`fabricfit.calibrate.published`)."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from fabricfit.calibrate.published import (
    PublishedAccuracy,
    RegimeReport,
    parse_accuracy_document,
    report_for,
)
from fabricfit.cost import Collective
from fabricfit.fabric.profiles import FabricProfile

ACCURACY_FILE = "measured-accuracy.json"


@lru_cache(maxsize=1)
def _published() -> PublishedAccuracy:
    text = resources.files("fabricfit.calibrate").joinpath(ACCURACY_FILE).read_text("utf-8")
    return parse_accuracy_document(json.loads(text))


def measured_accuracy(
    collective: Collective, size_bytes: int, nodes: int, profile: FabricProfile
) -> RegimeReport:
    """What is known of ``collective`` at ``size_bytes`` per rank on ``nodes`` nodes of
    ``profile`` (packed into its NVLink domains in order), from its family's rows."""
    return report_for(_published(), collective, size_bytes, nodes, profile)
