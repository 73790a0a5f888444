"""How right the model has been where a prediction falls: the published rows of its preset's
hardware family in its regime, and what the held-out rows at scale say (pure).

Theory of operation
-------------------
``benchmarks/cost_accuracy.py --write-regimes`` judges every published row on its preset and
writes :func:`accuracy_document` into the package (``measured-accuracy.json``): the regime table
over all rows, the table of each hardware family (:mod:`fabricfit.calibrate.families`: the
presets whose rows speak for a preset's numbers, inside one NVLink domain and across domains),
which family each preset reads in each, and the :class:`~fabricfit.calibrate.regimes.ScaleCaveat`.
A unit test recomputes it and fails while the copy is stale.

:func:`report_for` answers for one prediction (``fabricfit cost``): the rows of the preset's
family in the regime, held-out and fitted apart — never another cluster's rows: a p5 at 32 nodes
is not judged by an InfiniBand cluster's — or a plain "no published rows" naming whose were
looked for; a profile that is not a preset (a file, a calibrated profile) has none; and at
scale (≥ 8 domains, 4–256 MiB) the caveat from every held-out row there, whoever's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabricfit.calibrate import accuracy
from fabricfit.calibrate.families import ACROSS_DOMAINS, ONE_DOMAIN, family
from fabricfit.calibrate.regimes import (
    SCOPES,
    RegimeAccuracy,
    ScaleCaveat,
    domains_spanned,
    scope,
    size_band,
)
from fabricfit.cost.collectives import Collective
from fabricfit.fabric.profiles import PRESETS, FabricProfile

DOCUMENT_KIND = "fabricfit-measured-accuracy"
_Key = tuple[str, str, str]  # size band, scope, collective


def family_key(members: Iterable[str]) -> str:
    return ",".join(sorted(members))


def accuracy_document(
    regimes: Iterable[RegimeAccuracy],
    rows: int,
    *,
    families: Mapping[str, Iterable[RegimeAccuracy]],
    fabrics: Mapping[str, Mapping[str, str]],
    at_scale: ScaleCaveat | None,
) -> dict[str, Any]:
    """The document ``fabricfit cost`` reads: the regimes over every row, each family's
    (``families``: by :func:`family_key`), the family each preset reads ``one domain`` and
    ``across domains`` (``fabrics``), and the caveat at scale."""
    return {
        "kind": DOCUMENT_KIND,
        "generated_by": "benchmarks/cost_accuracy.py --write-regimes",
        "rows": rows,
        "regimes": [r.record() for r in regimes],
        "families": {key: [r.record() for r in found] for key, found in sorted(families.items())},
        "fabrics": {name: dict(where) for name, where in sorted(fabrics.items())},
        "at_scale": at_scale.record() if at_scale else None,
    }


def build_document(
    judged: Sequence[accuracy.Judged], profiles: Mapping[str, FabricProfile]
) -> dict[str, Any]:
    """:func:`accuracy_document` of the judged published rows: the regime table, each family's
    (``families.family`` of every preset in ``profiles``, one domain and across) and the
    caveat at scale (``accuracy.scale_caveat``)."""
    fabrics = {
        name: {where: family_key(family(name, where)) for where in (ONE_DOMAIN, ACROSS_DOMAINS)}
        for name in profiles
    }
    keys = {key for where in fabrics.values() for key in where.values()}
    return accuracy_document(
        (b.summary() for b in accuracy.band_table(judged, profiles)),
        len(judged),
        families={k: accuracy.family_regimes(judged, profiles, k.split(",")) for k in keys},
        fabrics=fabrics,
        at_scale=accuracy.scale_caveat(judged, profiles),
    )


@dataclass(frozen=True)
class PublishedAccuracy:
    regimes: dict[_Key, RegimeAccuracy]  # every row's (the table)
    families: dict[str, dict[_Key, RegimeAccuracy]]
    fabrics: dict[str, dict[str, str]]  # preset -> {one domain: key, across domains: key}
    at_scale: ScaleCaveat | None


def parse_accuracy_document(doc: Any) -> PublishedAccuracy:
    """The document's tables; ValueError on a document of another shape."""
    if not isinstance(doc, Mapping) or doc.get("kind") != DOCUMENT_KIND:
        raise ValueError(f"not a {DOCUMENT_KIND} document")
    families = {str(k): _regimes(v) for k, v in doc.get("families", {}).items()}
    fabrics = {
        str(k): {str(w): str(f) for w, f in v.items()} for k, v in doc.get("fabrics", {}).items()
    }
    scale = doc.get("at_scale")
    caveat = None
    if scale:
        ratios = (_float(scale[k]) for k in ("median_ratio", "least_ratio", "worst_ratio"))
        counts = (int(scale[k]) for k in ("held_out_rows", "sources", "optimistic_rows"))
        caveat = ScaleCaveat(*counts, *ratios)
    return PublishedAccuracy(_regimes(doc.get("regimes", [])), families, fabrics, caveat)


def _regimes(items: Iterable[Mapping[str, Any]]) -> dict[_Key, RegimeAccuracy]:
    found = {}
    for item in items:
        stats = ("median", "worst", "held_out_median", "held_out_worst")
        fitted = ("fitted_median", "fitted_worst")
        r = RegimeAccuracy(
            str(item["size_band"]),
            str(item["scope"]),
            str(item["collective"]),
            int(item["rows"]),
            int(item["fitted_rows"]),
            *(_float(item[k]) for k in stats),
            *(_float(item.get(k)) for k in fitted),
        )
        found[(r.size_band, r.scope, r.collective)] = r
    return found


def _float(value: Any) -> float:
    return math.nan if value is None else float(value)


@dataclass(frozen=True)
class RegimeReport:
    """What is known about one prediction's regime for one profile."""

    size_band: str
    scope: str
    collective: str
    profile: str
    preset: bool  # the profile is a preset (else no published row is of its numbers)
    family: tuple[str, ...]  # the presets whose rows were counted
    regime: RegimeAccuracy | None
    caveat: ScaleCaveat | None

    def whose(self) -> str:
        others = [f for f in self.family if f != self.profile]
        listed = f" ({', '.join([self.profile, *others])})" if others else ""
        return f"of {self.profile}'s hardware{listed}"

    def describe(self) -> str:
        """One line: the family's rows in the regime (or a plain none), and the caveat."""
        where = f"({self.size_band}, {self.scope}, {self.collective})"
        if self.regime is not None:
            line = self.regime.describe(self.whose())
        elif self.preset:
            line = f"no published rows {self.whose()} in this regime {where}"
        else:
            line = (
                f"no published rows of {self.profile}'s numbers in this regime {where}: it is"
                " not a preset (fabricfit calibrate's tables are its measure)"
            )
        return f"{line}; {self.caveat.describe()}" if self.caveat else line

    def record(self) -> dict[str, Any] | None:
        """``fabricfit cost --json``'s ``accuracy``: null when nothing is known at all."""
        if self.regime is None and self.caveat is None:
            return None
        if self.regime is not None:
            body = self.regime.record()
        else:
            body = RegimeAccuracy(
                self.size_band, self.scope, self.collective, 0, 0, *(math.nan,) * 4
            ).record()
            body["meets_targets"] = None
        body["fabrics"] = list(self.family)
        body["note"] = self.describe().split("; ")[0]
        body["at_scale"] = self.caveat.record() if self.caveat else None
        return body


def report_for(
    table: PublishedAccuracy,
    collective: Collective,
    size_bytes: int,
    nodes: int,
    profile: FabricProfile,
) -> RegimeReport:
    """The regime of ``collective`` at ``size_bytes`` per rank on ``nodes`` nodes of ``profile``
    (packed into its NVLink domains in order), judged on the rows of its family only."""
    where = scope(domains_spanned(nodes, profile), profile)
    key = (size_band(size_bytes), where, collective.value)
    preset = PRESETS.get(profile.name) == profile
    reads = table.fabrics.get(profile.name, {}) if preset else {}
    family_name = reads.get(ONE_DOMAIN if where == SCOPES[0] else ACROSS_DOMAINS)
    family = tuple(family_name.split(",")) if family_name else (profile.name,)
    regime = table.families.get(family_name, {}).get(key) if family_name else None
    caveat = (
        table.at_scale if ScaleCaveat.applies(size_bytes, where) and not profile.is_torus else None
    )
    return RegimeReport(*key, profile.name, preset, family, regime, caveat)
