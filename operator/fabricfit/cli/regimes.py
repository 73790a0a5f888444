"""The measured accuracy of the regime a ``fabricfit cost`` prediction falls in: the summary
``benchmarks/cost_accuracy.py --write-regimes`` keeps in the package (``measured-accuracy.json``
of ``fabricfit.calibrate``), read once per process."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from fabricfit.calibrate.regimes import (
    RegimeAccuracy,
    domains_spanned,
    parse_accuracy_document,
    scope,
    size_band,
)
from fabricfit.cost import Collective
from fabricfit.fabric.profiles import FabricProfile

ACCURACY_FILE = "measured-accuracy.json"


@lru_cache(maxsize=1)
def _regimes() -> dict[tuple[str, str, str], RegimeAccuracy]:
    text = resources.files("fabricfit.calibrate").joinpath(ACCURACY_FILE).read_text("utf-8")
    return parse_accuracy_document(json.loads(text))


def measured_accuracy(
    collective: Collective, size_bytes: int, nodes: int, profile: FabricProfile
) -> RegimeAccuracy | None:
    """The regime of ``collective`` at ``size_bytes`` per rank on ``nodes`` nodes of
    ``profile`` (packed into its NVLink domains in order), or None when no published row
    falls in it."""
    where = scope(domains_spanned(nodes, profile), profile)
    return _regimes().get((size_band(size_bytes), where, collective.value))
