"""Values echoed in messages: bounded, and named in the words of a YAML document."""

from __future__ import annotations

import pytest

from fabricfit.fabric.objects import MAX_ECHO_CHARS, kind_of, shorten


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "true"),
        (5, "5"),
        (-2.5, "-2.5"),
        ("ab", "'ab'"),
        ({"a": 1}, "a mapping"),
        ([1], "a list"),
        (10**5000, "a number of about 5000 digits"),
        (object(), "a value of an unknown kind"),
    ],
    ids=lambda case: str(case)[:20] if isinstance(case, str) else "",
)
def test_shorten_names_containers_and_quotes_scalars(value: object, text: str) -> None:
    assert shorten(value) == text


def test_shorten_cuts_long_text_and_escapes_what_cannot_be_printed() -> None:
    assert len(shorten("x" * 10_000)) == MAX_ECHO_CHARS and shorten("x" * 10_000).endswith("...")
    assert shorten("a\ud800b") == "'a\\ud800b'"  # a lone surrogate never reaches the terminal


def test_kind_of_never_says_a_python_type() -> None:
    kinds = {kind_of(v) for v in (None, True, 1, 1.5, "s", {}, [], ())}
    assert kinds == {"null", "a boolean", "a number", "a string", "a mapping", "a list"}
