"""The REST client retries transient failures with backoff, a bounded number of times, and
counts every request — against a real HTTP server on loopback."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import web

from fabricfit.kube import rest as rest_mod
from fabricfit.kube.rest import ApiError, Credentials, Rest, resource_of

Script = list[tuple[int, dict[str, Any]]]


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rest_mod, "BASE_DELAY_SECONDS", 0.001)
    monkeypatch.setattr(rest_mod, "MAX_DELAY_SECONDS", 0.002)


async def serve(script: Script) -> tuple[web.AppRunner, str, list[str]]:
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(f"{request.method} {request.path_qs}")
        status, body = script.pop(0) if script else (200, {"ok": True})
        return web.json_response(body, status=status)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}", seen


def run(script: Script, action: Callable[[Rest], Any]) -> tuple[Any, Rest, list[str]]:
    async def main() -> tuple[Any, Rest, list[str]]:
        runner, host, seen = await serve(script)
        client = Rest(Credentials(host=host, ssl_context=ssl.create_default_context()))
        try:
            try:
                result = await action(client)
            except ApiError as err:
                result = err
            return result, client, seen
        finally:
            await client.close()
            await runner.cleanup()

    return asyncio.run(main())


@pytest.mark.parametrize("status", [409, 429, 500, 503])
def test_transient_errors_are_retried(status: int) -> None:
    script: Script = [(status, {"message": "busy"}), (status, {"message": "busy"}), (200, {"a": 1})]
    result, client, seen = run(script, lambda r: r.patch("/api/v1/namespaces/x/pods/p", {"b": 2}))
    assert result == {"a": 1}
    assert len(seen) == 3
    assert client.requests[("PATCH", "pods", status)] == 2
    assert client.requests[("PATCH", "pods", 200)] == 1


def test_retries_are_bounded() -> None:
    script: Script = [(503, {"message": "down"})] * 20
    result, _client, seen = run(script, lambda r: r.get("/api/v1/nodes"))
    assert isinstance(result, ApiError) and result.status == 503
    assert len(seen) == rest_mod.MAX_ATTEMPTS


@pytest.mark.parametrize("status", [400, 403, 422])
def test_client_errors_are_not_retried(status: int) -> None:
    result, _client, seen = run([(status, {"message": "no"})], lambda r: r.get("/api/v1/nodes"))
    assert isinstance(result, ApiError) and result.status == status and result.message == "no"
    assert len(seen) == 1


def test_missing_object_reads_as_none() -> None:
    result, _client, _seen = run([(404, {"message": "gone"})], lambda r: r.get("/api/v1/nodes/x"))
    assert result is None


def test_list_follows_continue_tokens() -> None:
    script: Script = [
        (200, {"items": [{"n": 1}], "metadata": {"continue": "abc"}}),
        (200, {"items": [{"n": 2}], "metadata": {}}),
    ]
    result, _client, seen = run(script, lambda r: r.list("/api/v1/pods", label_selector="a=b"))
    assert result == [{"n": 1}, {"n": 2}]
    assert "continue=abc" in seen[1] and "labelSelector=a%3Db" in seen[0]


def test_unreachable_server_is_an_api_error_after_retries() -> None:
    async def main() -> ApiError:
        client = Rest(
            Credentials(host="http://127.0.0.1:9", ssl_context=ssl.create_default_context())
        )
        try:
            await client.get("/api/v1/nodes")
        except ApiError as err:
            return err
        finally:
            await client.close()
        raise AssertionError("expected an error")

    err = asyncio.run(main())
    assert err.status == 0


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        ("/api/v1/namespaces/a/pods/b", "pods"),
        ("/api/v1/nodes", "nodes"),
        (
            "/apis/fabricfit.dev/v1alpha1/namespaces/a/trainingtopologies/t/status",
            "trainingtopologies/status",
        ),
        ("/apis/batch/v1/namespaces/a/jobs/j", "jobs"),
        ("/api/v1/namespaces/a", "namespaces"),
        ("/version", "other"),
    ],
)
def test_resource_labels_are_bounded(path: str, resource: str) -> None:
    assert resource_of(path) == resource
