"""A small asynchronous REST client for the Kubernetes API with retries.

Credentials come from the kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``) or the in-cluster
service account, loaded by the official client's config loader; requests go out through aiohttp
(already a kopf dependency), so nothing blocks the operator's event loop.

Retries: connection errors, 409 Conflict, 429 and 5xx are retried with exponential backoff and
jitter, a bounded number of times; every other status is the caller's to handle. 404 on a read
is ``None``, not an error. Every request is counted by verb, resource and status code so tests
and metrics can prove the operator does not hot-loop.
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, urlencode

import aiohttp
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

PatchKind = Literal["merge", "json", "strategic"]
CONTENT_TYPES: dict[PatchKind, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}
RETRIABLE_STATUS = frozenset({409, 429, 500, 502, 503, 504})
MAX_ATTEMPTS = 6
BASE_DELAY_SECONDS = 0.2
MAX_DELAY_SECONDS = 5.0
REQUEST_TIMEOUT_SECONDS = 30.0


class ApiError(Exception):
    """A non-retriable (or retries exhausted) API response."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message


@dataclass
class Credentials:
    host: str
    ssl_context: ssl.SSLContext
    configuration: Any = None

    def headers(self) -> dict[str, str]:
        cfg = self.configuration
        if cfg is None:
            return {}
        hook = getattr(cfg, "refresh_api_key_hook", None)
        if hook is not None:
            hook(cfg)
        # The official loaders (kubeconfig token, in-cluster service account) store the token
        # under "BearerToken"; "authorization" is the older key.
        token = (
            (
                cfg.get_api_key_with_prefix("BearerToken")
                or cfg.get_api_key_with_prefix("authorization")
            )
            if cfg.api_key
            else None
        )
        return {"Authorization": token} if token else {}


def load_credentials(kubeconfig: str | None = None) -> Credentials:
    """Kubeconfig first (explicit path, $KUBECONFIG, ~/.kube/config), then in-cluster."""
    cfg = k8s_client.Configuration()
    try:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=cfg
        )
    except (k8s_config.ConfigException, FileNotFoundError, TypeError):
        if kubeconfig:
            raise
        k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=cfg
        )
    return _credentials(cfg)


def credentials_from_config(config: Mapping[str, Any]) -> Credentials:
    """Credentials of a kubeconfig already read (and bounded) by the caller, its current
    context; relative file paths in it must already be absolute."""
    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
        dict(config), client_configuration=cfg, persist_config=False
    )
    return _credentials(cfg)


def _credentials(cfg: Any) -> Credentials:
    ctx = (
        ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.verify_ssl
        else ssl.create_default_context()
    )
    if not cfg.verify_ssl:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return Credentials(host=cfg.host.rstrip("/"), ssl_context=ctx, configuration=cfg)


@dataclass
class Rest:
    """Asynchronous JSON REST calls against one API server."""

    credentials: Credentials
    requests: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    _session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_SECONDS)
            connector = aiohttp.TCPConnector(ssl=self.credentials.ssl_context)
            self._session = aiohttp.ClientSession(timeout=timeout, connector=connector)
        return self._session

    async def get(self, path: str) -> dict[str, Any] | None:
        try:
            return await self.request("GET", path)
        except ApiError as err:
            if err.status == 404:
                return None
            raise

    async def list(self, path: str, *, label_selector: str | None = None) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params: dict[str, str] = {"limit": "500"}
        if label_selector:
            params["labelSelector"] = label_selector
        while True:
            page = await self.request("GET", f"{path}?{urlencode(params)}")
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            params["continue"] = token

    async def patch(self, path: str, body: Any, kind: PatchKind = "merge") -> dict[str, Any]:
        return await self.request("PATCH", path, body=body, content_type=CONTENT_TYPES[kind])

    async def create(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return await self.request("POST", path, body=body)

    async def replace(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT: the whole object, guarded by the ``resourceVersion`` it carries (409 if stale)."""
        return await self.request("PUT", path, body=body)

    async def watch(self, path: str, params: Mapping[str, str]) -> AsyncIterator[dict[str, Any]]:
        """The events of one watch request (``?watch=1``), until the server ends it."""
        query = urlencode({**params, "watch": "1"})
        headers = {"Accept": "application/json", **self.credentials.headers()}
        server_seconds = float(params.get("timeoutSeconds") or 300)
        timeout = aiohttp.ClientTimeout(total=None, sock_read=server_seconds + 30)
        url = f"{self.credentials.host}{path}?{query}"
        resource = resource_of(path)
        async with self._client().get(url, headers=headers, timeout=timeout) as resp:
            self.requests[("WATCH", resource, resp.status)] += 1
            if resp.status >= 400:
                raise ApiError(resp.status, resp.reason or "", _message(await resp.text()))
            async for line in resp.content:
                if line.strip():
                    yield json.loads(line)

    async def request(
        self, method: str, path: str, *, body: Any = None, content_type: str = "application/json"
    ) -> dict[str, Any]:
        """One logical request, retried on transient failures."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                return await self._once(method, path, body, content_type)
            except ApiError as err:
                if err.status not in RETRIABLE_STATUS or attempt == MAX_ATTEMPTS:
                    raise
            except (aiohttp.ClientError, TimeoutError) as err:
                if attempt == MAX_ATTEMPTS:
                    raise ApiError(0, "Unreachable", str(err) or type(err).__name__) from err
            await asyncio.sleep(backoff_seconds(attempt))
        raise AssertionError("unreachable")

    async def _once(self, method: str, path: str, body: Any, content_type: str) -> dict[str, Any]:
        headers = {"Accept": "application/json", **self.credentials.headers()}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body)
        url = self.credentials.host + path
        resource = resource_of(path)
        try:
            async with self._client().request(method, url, data=data, headers=headers) as resp:
                text = await resp.text()
                self.requests[(method, resource, resp.status)] += 1
        except (aiohttp.ClientError, TimeoutError):
            self.requests[(method, resource, 0)] += 1
            raise
        if resp.status >= 400:
            raise ApiError(resp.status, resp.reason or "", _message(text))
        return json.loads(text) if text else {}


def backoff_seconds(attempt: int) -> float:
    """Exponential backoff with full jitter, capped."""
    ceiling = min(MAX_DELAY_SECONDS, BASE_DELAY_SECONDS * 2 ** (attempt - 1))
    return random.uniform(ceiling / 2, ceiling)


def _message(text: str) -> str:
    try:
        return str(json.loads(text).get("message", text))[:500]
    except (ValueError, AttributeError):
        return text[:500]


def resource_of(path: str) -> str:
    """The resource part of an API path, for bounded metric labels: ``pods``, ``jobs/status``…"""
    parts = [p for p in path.split("?", maxsplit=1)[0].split("/") if p]
    names = {
        "pods",
        "nodes",
        "jobs",
        "events",
        "trainingtopologies",
        "jobsets",
        "pytorchjobs",
        "leaderworkersets",
        "namespaces",
        "computedomains",
        "workloads",
        "admissionchecks",
        "resourceclaims",
        "deviceclasses",
    }
    for i, part in enumerate(parts):
        if part == "namespaces" and len(parts) > i + 2:
            continue  # a namespaced path: the resource comes after the namespace name
        if part in names:
            tail = parts[i + 2] if len(parts) > i + 2 else ""
            return f"{part}/{tail}" if tail in {"status", "binding"} else part
    return "other"


def path_for(
    api_version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    sub: str | None = None,
) -> str:
    """``/api/v1/...`` or ``/apis/<group>/<version>/...`` for a resource."""
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    segments: Sequence[str] = [base]
    if namespace:
        segments = [*segments, "namespaces", quote(namespace, safe="")]
    segments = [*segments, plural]
    if name:
        segments = [*segments, quote(name, safe="")]
    if sub:
        segments = [*segments, sub]
    return "/".join(s.strip("/") if i else s.rstrip("/") for i, s in enumerate(segments))
