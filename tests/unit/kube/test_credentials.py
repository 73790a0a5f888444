"""Bearer tokens from a kubeconfig reach the REST client's requests (ServiceAccount tokens)."""

from __future__ import annotations

from pathlib import Path

import yaml

from fabricfit.kube.rest import load_credentials


def test_kubeconfig_token_becomes_the_authorization_header(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": "https://127.0.0.1:6443",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "abc123"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    credentials = load_credentials(str(path))
    assert credentials.host == "https://127.0.0.1:6443"
    assert credentials.headers() == {"Authorization": "Bearer abc123"}
