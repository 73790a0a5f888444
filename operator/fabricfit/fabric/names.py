"""Names people type — presets, collectives, label schemes, subcommands, workload kinds, spec
fields — and the one way a mistyped one is answered: "did you mean …?" (pure).

The suggestion is :func:`difflib.get_close_matches` over the known names, compared without case
(``Topograph`` is ``topograph``), with two extra rules: a snake_case key whose camelCase form is
known (``hidden_size`` → ``hiddenSize``) is always that name, however far the two look apart to
difflib, and so is a name with two letters swapped (``zhs`` → ``zsh``), which difflib scores low
in short words. Nothing close enough (ratio below :data:`CUTOFF`): no suggestion, and
the message lists what is known instead.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from fabricfit.fabric.objects import shorten

#: difflib's similarity ratio a known name needs to be suggested (its own default, 0.6, also
#: suggests ``gke`` for ``eks``; 0.7 keeps one-letter slips such as ``dgx-h10`` and ``allreduce``).
CUTOFF = 0.7
MAX_LISTED = 24
#: Longer input is no typo of a name (and difflib's time grows with the product of lengths).
MAX_GUESS_CHARS = 100


def camel(name: str) -> str:
    """``hidden_size`` → ``hiddenSize`` (the CRD's spelling of a snake_case key)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def closest(given: object, known: Iterable[str]) -> str | None:
    """The known name ``given`` most likely meant, or None when none is close."""
    if not isinstance(given, str) or not 0 < len(given) <= MAX_GUESS_CHARS:
        return None
    names = list(dict.fromkeys(known))
    if "_" in given and camel(given) in names:
        return camel(given)
    by_fold = {n.casefold(): n for n in reversed(names)}  # first spelling wins
    word = given.casefold()
    found = difflib.get_close_matches(word, list(by_fold), n=1, cutoff=CUTOFF)
    swapped = [n for n in by_fold if sorted(n) == sorted(word)]  # letters swapped: "zhs"
    return by_fold[found[0]] if found else by_fold[swapped[0]] if swapped else None


def listing(known: Iterable[str]) -> str:
    """``a, b, c`` — at most :data:`MAX_LISTED` names, then ``...``."""
    names = list(known)
    shown = names[:MAX_LISTED] + (["..."] if len(names) > MAX_LISTED else [])
    return ", ".join(shown)


def suggestion(given: object, known: Iterable[str]) -> str:
    """`` (did you mean NAME?)`` when a known name is close, else the empty string."""
    found = closest(given, known)
    return f" (did you mean {found}?)" if found is not None else ""


def unknown_name(what: str, given: object, known: Iterable[str], others: str | None = None) -> str:
    """``unknown WHAT 'GIVEN' (did you mean NAME?)``; with nothing close, the names one can use
    (``others``, or the known names listed as ``one of …``) instead of a suggestion."""
    names = list(known)
    found = closest(given, names)
    if found is not None:
        return f"unknown {what} {shorten(given)} (did you mean {found}?)"
    return f"unknown {what} {shorten(given)} ({others or 'one of ' + listing(names)})"
