"""The test library's one wait loop (``fabricfit_dev.waiting``)."""

from __future__ import annotations

import pytest

from fabricfit_dev.waiting import WaitTimeoutError, wait_for


def test_returns_the_first_truthy_answer() -> None:
    answers = iter([None, [], {"nodes": ["a"]}, "later"])
    assert wait_for(lambda: next(answers), 5, 0.0) == {"nodes": ["a"]}


def test_times_out_as_an_assertion_naming_what_was_awaited() -> None:
    with pytest.raises(WaitTimeoutError, match="waiting for the moon") as raised:
        wait_for(lambda: None, 0.05, 0.01, "the moon")
    assert isinstance(raised.value, AssertionError)  # a test's wait fails as a check


def test_what_is_asked_only_at_the_deadline() -> None:
    seen: list[int] = []

    def count() -> bool:
        seen.append(len(seen))
        return False

    with pytest.raises(WaitTimeoutError, match=r"waiting for \d+ answers, none true"):
        wait_for(count, 0.05, 0.01, lambda: f"{len(seen)} answers, none true")
    assert len(seen) > 1


def test_an_error_of_the_predicate_ends_the_wait_at_once() -> None:
    def died() -> bool:
        raise RuntimeError("the process exited")

    with pytest.raises(RuntimeError, match="the process exited"):
        wait_for(died, 60, 0.01)
