"""``fabricfit release`` and its kubeconfig: every problem one line, exit 2 for the kubeconfig
(input) and 1 for the API server (refused, unreachable, untrusted); no Python exception names,
no traceback; a "billion laughs" kubeconfig refused at once."""

from __future__ import annotations

import http.server
import json
import re
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fabricfit.cli.kubeconfig import kubeconfig_paths, merge, read_kubeconfig
from fabricfit.cli.main import main
from fabricfit_dev.cluster.pki import self_signed_serving_cert

EXCEPTION_NAME = re.compile(r"\b[A-Z][A-Za-z]+(Error|Exception)\b")


def kubeconfig(server: str = "https://127.0.0.1:1", **changes: object) -> dict[str, object]:
    config: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": server}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }
    config.update(changes)
    return config


def _laughs() -> str:
    lines = ["a: &a [" + ", ".join(['"lol"'] * 9) + "]"]
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 9) + "]")
    return "\n".join([*lines, "current-context: c"]) + "\n"


CLUSTER = {"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}
BAD = {
    "missing file": (None, "cannot read kubeconfig file"),
    "not YAML": ("clusters: [a\n", "invalid YAML at line 2"),
    "no current context": (kubeconfig(**{"current-context": ""}), "no current context"),
    "a context that is not there": (
        kubeconfig(**{"current-context": "other"}),
        "Expected object with name other in kube-config/contexts list",
    ),
    "clusters not a list": (kubeconfig(clusters=5), "clusters is a number, not a list"),
    "a cluster without a name": (
        kubeconfig(clusters=[{"cluster": {}}]),
        "clusters: every entry needs a name",
    ),
    "a client certificate that is not there": (
        kubeconfig(users=[{"name": "u", "user": {"client-certificate": "no.crt"}}]),
        "File does not exist: ",
    ),
    "a certificate authority that is no certificate": (
        kubeconfig(
            clusters=[
                {
                    "name": "k",
                    "cluster": {**CLUSTER["cluster"], "certificate-authority-data": "eA=="},
                }
            ]
        ),
        "cannot load its certificates",
    ),
    "a billion laughs": (_laughs(), "YAML aliases expand the document"),
}


def _write(tmp_path: Path, body: object) -> str:
    path = tmp_path / "kubeconfig"
    if body is not None:
        path.write_text(body if isinstance(body, str) else yaml.safe_dump(body), encoding="utf-8")
    return str(path)


def _release(capsys: pytest.CaptureFixture[str], path: str) -> tuple[int, str]:
    code = main(["release", "-A", "--kubeconfig", path, "--settle-seconds", "0"])
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("fabricfit release: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and not EXCEPTION_NAME.search(err), err
    return code, err


@pytest.mark.parametrize(("body", "expected"), BAD.values(), ids=BAD.keys())
def test_a_bad_kubeconfig_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: object, expected: str
) -> None:
    started = time.monotonic()
    code, err = _release(capsys, _write(tmp_path, body))
    assert code == 2 and expected in err
    assert time.monotonic() - started < 5  # the billion laughs: refused, not expanded


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fabricfit.kube.rest.backoff_seconds", lambda _attempt: 0.0)


@pytest.mark.usefixtures("no_backoff")
def test_an_unreachable_server_is_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, err = _release(capsys, _write(tmp_path, kubeconfig()))
    assert code == 1 and "cannot reach the API server https://127.0.0.1:1" in err


class _Forbidden(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"kind": "Status", "message": 'pods is forbidden: User "u"'}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An HTTPS server on loopback that refuses everything (403), and its certificate."""
    cert, key = self_signed_serving_cert(tmp_path / "tls", "127.0.0.1")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Forbidden)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{httpd.server_address[1]}", cert
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.usefixtures("no_backoff")
def test_an_untrusted_server_certificate_is_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: tuple[str, Path]
) -> None:
    url, _ = server
    code, err = _release(capsys, _write(tmp_path, kubeconfig(url)))
    assert code == 1 and f"the API server {url} is not trusted: certificate verify failed" in err


def test_a_refusal_is_exit_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: tuple[str, Path]
) -> None:
    url, cert = server
    (tmp_path / "ca.crt").write_bytes(cert.read_bytes())
    cluster = {"name": "k", "cluster": {"server": url, "certificate-authority": "ca.crt"}}
    code, err = _release(capsys, _write(tmp_path, kubeconfig(url, clusters=[cluster])))
    assert code == 1
    assert f"the API server {url} refused: 403 Forbidden: pods is forbidden" in err


def test_kubeconfig_files_merge_as_kubectl_merges_them(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    first = tmp_path / "a" / "config"
    first.write_text(
        yaml.safe_dump(
            {
                "current-context": "c",
                "clusters": [{"name": "k", "cluster": {"certificate-authority": "ca.crt"}}],
            }
        )
    )
    second = tmp_path / "config"
    second.write_text(yaml.safe_dump(kubeconfig(**{"current-context": "d"})))
    merged = merge([(str(p), read_kubeconfig(str(p))) for p in (first, second)])
    assert merged["current-context"] == "c"
    assert merged["clusters"] == [
        {"name": "k", "cluster": {"certificate-authority": str(tmp_path / "a" / "ca.crt")}}
    ]
    assert [c["name"] for c in merged["contexts"]] == ["c"]


def test_which_files_are_read(tmp_path: Path) -> None:
    assert kubeconfig_paths("x", {"KUBECONFIG": "y"}) == (["x"], True)
    assert kubeconfig_paths(None, {"KUBECONFIG": "y::z"}) == (["y", "z"], False)
    paths, required = kubeconfig_paths(None, {})
    assert paths[0].endswith("/.kube/config") and not required
