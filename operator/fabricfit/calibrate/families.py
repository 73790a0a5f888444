"""Whose published rows speak for a preset's numbers: its hardware family (pure).

A preset's fitted numbers come from measured rows (``benchmarks/cost_accuracy.py`` fits them),
and three rules say which presets share them:

* :data:`ALSO_FIT_ON`: a preset fitted on another's rows as well (the same board and NICs:
  dgx-h200 on dgx-h100's);
* :data:`COPY_FITTED_FROM`: a preset that is another's hardware below the leaf takes all of its
  fitted numbers (the tapered H100 fabrics);
* a preset field commented ``# as ORIGIN (fitted there)`` (:data:`INHERITED`) is held at ORIGIN's
  fit: the cloud machines on an HGX board take its NVLink numbers.

How right the model is for a preset is then measured on the rows of its family only, and the
family depends on what a prediction uses. Inside one NVLink domain it uses the board's numbers,
so every preset linked by any rule counts (an aws-p5 node is an HGX H100 board: dgx-h100's
one-node rows speak for it). Across domains it uses the network's too, which only the first two
rules share: aws-p5's EFA rows and dgx-h100's InfiniBand rows are different clusters.
A TPU preset is a family of its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources

ALSO_FIT_ON: Mapping[str, tuple[str, ...]] = {"dgx-h200": ("dgx-h100",)}
COPY_FITTED_FROM: Mapping[str, str] = {
    "h100-leaf-spine-2to1": "dgx-h100",
    "h100-rail-only": "dgx-h100",
}
INHERITED = re.compile(
    r"^(?P<name>[a-z0-9_]+):[^#\n]*# as (?P<origin>[a-z0-9-]+) \(fitted there\)", re.M
)
ONE_DOMAIN, ACROSS_DOMAINS = "one domain", "across domains"


def inherited_origins(texts: Mapping[str, str]) -> dict[str, set[str]]:
    """Per preset (by name), the presets its preset file takes fitted numbers from."""
    return {
        name: {found["origin"] for found in INHERITED.finditer(text)}
        for name, text in texts.items()
    }


@lru_cache(maxsize=1)
def _preset_texts() -> dict[str, str]:
    folder = resources.files("fabricfit.fabric.profiles").joinpath("presets")
    return {
        entry.name.removesuffix(".yaml"): entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".yaml")
    }


def _links(one_domain: bool, texts: Mapping[str, str]) -> list[tuple[str, str]]:
    links = [(a, b) for a, others in ALSO_FIT_ON.items() for b in others]
    links += list(COPY_FITTED_FROM.items())
    if one_domain:
        links += [(a, b) for a, found in inherited_origins(texts).items() for b in found]
    return links


def family(preset: str, where: str, texts: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The presets whose rows speak for ``preset``'s numbers ``where`` (:data:`ONE_DOMAIN` or
    :data:`ACROSS_DOMAINS`): ``preset`` and every preset the rules link it to, sorted."""
    links = _links(where == ONE_DOMAIN, texts if texts is not None else _preset_texts())
    return tuple(sorted(_component(preset, links)))


def _component(start: str, links: Iterable[tuple[str, str]]) -> set[str]:
    neighbours: dict[str, set[str]] = {}
    for a, b in links:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    found, todo = {start}, [start]
    while todo:
        for other in neighbours.get(todo.pop(), set()) - found:
            found.add(other)
            todo.append(other)
    return found
