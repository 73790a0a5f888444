"""The kubeconfig ``fabricfit release`` talks to the cluster with: read like every other input.

Theory of operation
-------------------
The files are ``--kubeconfig``, else the ``$KUBECONFIG`` list (files that do not exist are
skipped, as kubectl skips them), else ``~/.kube/config``; with none of them, the in-cluster
service account (the chart's post-delete hook). Each file is read through
:func:`fabricfit.cli.inputs.read_objects` — a regular file, at most 256 MiB, YAML aliases
bounded, so a "billion laughs" kubeconfig is refused in milliseconds instead of taking the
memory of the machine — and must be one mapping. Several files merge as kubectl merges them:
the first ``current-context`` and the first cluster, context or user of each name win; file
paths in an entry are made absolute against the directory of the file that holds it. The
merged document goes to the Kubernetes client's loader (:func:`fabricfit.kube.rest.
credentials_from_config`), which only reads what it is given. Every problem — no file, not YAML,
no current context, a context naming no cluster, a certificate that does not load — is a
:class:`UsageError` (one line, exit 2) that names the file and never a Python exception.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fabricfit.cli.common import UsageError, one_line
from fabricfit.cli.inputs import read_objects, shown
from fabricfit.fabric.objects import kind_of
from fabricfit.kube.rest import Credentials, credentials_from_config, load_credentials

NAMED_LISTS = {"clusters": "cluster", "contexts": "context", "users": "user"}
# Entries that name a file (kubectl resolves them against the kubeconfig's directory).
PATH_FIELDS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}
MAX_MESSAGE_CHARS = 200


def kubeconfig_paths(explicit: str | None, env: Mapping[str, str]) -> tuple[list[str], bool]:
    """(the files to read, whether each must exist: only ``--kubeconfig`` must)."""
    if explicit:
        return [explicit], True
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return listed, False
    return [str(Path.home() / ".kube" / "config")], False


def credentials(explicit: str | None, env: Mapping[str, str] | None = None) -> Credentials:
    """Credentials for the current context (module docstring); UsageError for any problem."""
    paths, required = kubeconfig_paths(explicit, os.environ if env is None else env)
    found = [p for p in paths if required or Path(p).exists()]
    if not found:
        return _in_cluster()
    config = merge([(path, read_kubeconfig(path)) for path in found])
    where = "kubeconfig " + ", ".join(shown(p) for p in found)
    if not config.get("current-context"):
        raise UsageError(f"{where}: no current context (kubectl config use-context NAME)")
    try:
        return credentials_from_config(config)
    except (OSError, ssl.SSLError) as err:
        reason = getattr(err, "strerror", None) or getattr(err, "reason", None) or str(err)
        raise UsageError(one_line(f"{where}: cannot load its certificates: {reason}")) from None
    except Exception as err:  # the client's loader: ConfigException, or a field of a wrong type
        raise UsageError(one_line(f"{where}: {_loader_message(err)}", 300)) from None


def read_kubeconfig(path: str) -> dict[str, Any]:
    """The one mapping in ``path``, its named lists checked and its file paths made absolute."""
    objects = read_objects(path, "kubeconfig")
    if len(objects) != 1:
        raise UsageError(
            f"kubeconfig file {shown(path)}: expected one document, found {len(objects)}"
        )
    config = dict(objects[0])
    base = Path(path).resolve().parent
    for key, item in NAMED_LISTS.items():
        entries = config.get(key) or []
        if not isinstance(entries, list):
            raise UsageError(
                f"kubeconfig file {shown(path)}: {key} is {kind_of(entries)}, not a list"
            )
        config[key] = [
            _entry(e, item, base, f"kubeconfig file {shown(path)}: {key}") for e in entries
        ]
    return config


def _entry(entry: object, item: str, base: Path, where: str) -> dict[str, Any]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise UsageError(f"{where}: every entry needs a name")
    body = entry.get(item)
    if not isinstance(body, Mapping):
        raise UsageError(f"{where}: {entry['name']!r} has no {item} mapping")
    body = dict(body)
    for field in PATH_FIELDS.get(item, ()):
        value = body.get(field)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            body[field] = str(base / value)
    return {**entry, item: body}


def merge(configs: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """kubectl's merge: the first current-context, and the first entry of each name, win."""
    merged: dict[str, Any] = {key: [] for key in NAMED_LISTS}
    for _, config in configs:
        if not merged.get("current-context") and config.get("current-context"):
            merged["current-context"] = config["current-context"]
        for key in NAMED_LISTS:
            names = {e["name"] for e in merged[key]}
            merged[key] += [e for e in config.get(key) or [] if e["name"] not in names]
    return merged


def _in_cluster() -> Credentials:
    try:
        return load_credentials(None)
    except Exception:  # the client's ConfigException: no service account here
        raise UsageError(
            "no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) and not running "
            "inside a cluster"
        ) from None


def _loader_message(err: Exception) -> str:
    """The client's words without its boilerplate; its type name only if it said nothing."""
    text = " ".join(str(err).split()).removeprefix("Invalid kube-config file. ")
    if not text or text.startswith(("'", '"')) or type(err).__module__ == "builtins":
        return "not a kubeconfig the Kubernetes client can use (a field of the wrong type?)"
    return text[:MAX_MESSAGE_CHARS]
