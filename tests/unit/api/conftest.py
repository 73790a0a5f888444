"""Fixtures for the api tests: the generated schema and a CEL checker for specs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from unit.api.apiserver import apply_defaults, failed_rules, openapi_schema


@pytest.fixture(scope="session")
def schema() -> dict[str, Any]:
    return openapi_schema()


@pytest.fixture(scope="session")
def spec_schema(schema: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = schema["properties"]["spec"]
    return spec


@pytest.fixture(scope="session")
def status_schema(schema: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = schema["properties"]["status"]
    return status


@pytest.fixture(scope="session")
def spec_failures(spec_schema: dict[str, Any]) -> Callable[..., list[str]]:
    """Default a spec like the API server, then return the CEL rules it fails."""

    def check(spec: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
        new = apply_defaults(spec_schema, spec)
        previous = None if old is None else apply_defaults(spec_schema, old)
        return failed_rules(spec_schema, new, previous)

    return check
