"""Peering priorities (the oldest replica acts) and creating the peering object kopf needs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from fabricfit.kube.peering import ensure_peering, parse_priority
from fabricfit.kube.rest import ApiError


def test_integer_priorities_pass_through() -> None:
    assert parse_priority("10") == 10 and parse_priority("-3") == -3


def test_oldest_gives_an_earlier_start_the_higher_priority() -> None:
    first = parse_priority("oldest", now_seconds=1_700_000_000.0)
    later = parse_priority("oldest", now_seconds=1_700_000_000.000_002)
    assert first > later
    assert parse_priority("oldest") < first  # now is later than that


def test_bad_priority_names_both_forms() -> None:
    with pytest.raises(ValueError, match="integer or 'oldest'"):
        parse_priority("high")


class FakeRest:
    def __init__(self, existing: set[str], conflict: bool = False) -> None:
        self.existing = existing
        self.conflict = conflict
        self.created: list[tuple[str, dict[str, Any]]] = []

    async def get(self, path: str) -> dict[str, Any] | None:
        return {} if path in self.existing else None

    async def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if self.conflict:
            raise ApiError(409, "AlreadyExists", "raced")
        self.created.append((path, body))
        return body


def test_cluster_wide_creates_one_cluster_peering_when_missing() -> None:
    rest = FakeRest(set())
    created = asyncio.run(ensure_peering(rest, "ff", ()))  # type: ignore[arg-type]
    assert created == ["ClusterKopfPeering ff"]
    assert rest.created == [
        (
            "/apis/kopf.dev/v1/clusterkopfpeerings",
            {"apiVersion": "kopf.dev/v1", "kind": "ClusterKopfPeering", "metadata": {"name": "ff"}},
        )
    ]


def test_namespaced_creates_only_the_missing_ones_and_tolerates_a_race() -> None:
    rest = FakeRest({"/apis/kopf.dev/v1/namespaces/a/kopfpeerings/ff"})
    created = asyncio.run(ensure_peering(rest, "ff", ("a", "b")))  # type: ignore[arg-type]
    assert created == ["KopfPeering b/ff"]
    raced = FakeRest(set(), conflict=True)
    assert asyncio.run(ensure_peering(raced, "ff", ("a",))) == []  # type: ignore[arg-type]
