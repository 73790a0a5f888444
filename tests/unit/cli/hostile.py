"""Generators of hostile input files for the CLI fuzz tests (hypothesis strategies).

Each strategy takes a *valid* document (a node dump, a pod dump, a TrainingTopology with its
workload) and breaks it in one class of ways that once crashed ``fabricfit plan`` (issue #11):
explicit YAML tags that do not parse, integers with thousands of digits, undecodable bytes and
other encodings, alias bombs and self-referencing aliases, deep nesting, wrong document kinds,
workload fields of the wrong type, unencodable names. A class name comes with every file so the
tests can count what they tried.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml
from hypothesis import strategies as st

READY = {"conditions": [{"type": "Ready", "status": "True"}]}
TAGS = ["int", "float", "bool", "timestamp", "null", "binary", "set", "omap", "pairs", "str"]
JUNK_VALUES: list[Any] = [0, -1, 1.5, "x", "", None, True, [], [1, "a"], {}, {"a": [None]}]


def nodes_doc(count: int = 4, gpus: int = 8) -> dict[str, Any]:
    items = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"n{i}",
                "labels": {
                    "topology.fabricfit.dev/rail-group": f"rg-{i // 2}",
                    "topology.fabricfit.dev/spine": "s0",
                    "kubernetes.io/os": "linux",
                },
            },
            "spec": {"taints": []},
            "status": {**READY, "allocatable": {"nvidia.com/gpu": str(gpus)}},
        }
        for i in range(count)
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def pods_doc() -> dict[str, Any]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "busy", "namespace": "x"},
        "spec": {"nodeName": "n0", "containers": [{"name": "c", "resources": {}}]},
        "status": {"phase": "Running"},
    }
    return {"apiVersion": "v1", "kind": "List", "items": [pod]}


def topology_docs(kind: str = "Job") -> list[dict[str, Any]]:
    template = {
        "metadata": {"labels": {"app": "train"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "train", "image": "train"}],
        },
    }
    versions = {"Job": "batch/v1", "JobSet": "jobset.x-k8s.io/v1alpha2"}
    if kind == "Job":
        spec: dict[str, Any] = {"completionMode": "Indexed", "completions": 2, "template": template}
    else:
        job = {"completionMode": "Indexed", "completions": 2, "template": template}
        spec = {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": job}}]}
    tt = {
        "apiVersion": "fabricfit.dev/v1alpha1",
        "kind": "TrainingTopology",
        "metadata": {"name": "tt"},
        "spec": {
            "workloadRef": {"apiVersion": versions[kind], "kind": kind, "name": "train"},
            "gpusPerPod": 8,
            "parallelism": {"tensor": 8, "data": 2},
        },
    }
    workload = {"apiVersion": versions[kind], "kind": kind, "metadata": {"name": "train"}}
    return [tt, {**workload, "spec": spec}]


def dump(doc: Any, as_json: bool) -> bytes:
    if as_json:
        return json.dumps(doc).encode()
    docs = doc if isinstance(doc, list) else [doc]
    return yaml.safe_dump_all(docs, allow_unicode=True, sort_keys=False).encode()


def paths_of(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value in ``doc`` (mapping keys and list indices)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += paths_of(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += paths_of(value, (*prefix, index))
    return out


def put(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = copy.deepcopy(doc)
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


MARK = "FUZZ-MARK-7c1"


def yaml_with(doc: Any, path: tuple[Any, ...], raw: str) -> bytes:
    """``doc`` as YAML with the value at ``path`` replaced by the raw YAML text ``raw``."""
    return dump(put(doc, path, MARK), False).replace(MARK.encode(), raw.encode())


@st.composite
def base_documents(draw: st.DrawFn) -> tuple[str, Any]:
    """(which file, a valid document for it)."""
    which = draw(st.sampled_from(["nodes", "pods", "topology"]))
    if which == "nodes":
        return which, nodes_doc()
    if which == "pods":
        return which, pods_doc()
    return which, topology_docs(draw(st.sampled_from(["Job", "JobSet"])))


def bad_tag(draw: st.DrawFn, doc: Any) -> bytes:
    tag = draw(st.sampled_from(TAGS))
    value = draw(st.sampled_from(["x", "maybe", "1.2.3", "2020-13-45", "[", "0x", "~", "!!"]))
    path = draw(st.sampled_from(paths_of(doc)))
    return yaml_with(doc, path, f"!!{tag} {json.dumps(value)}")


def huge_number(draw: st.DrawFn, doc: Any) -> bytes:
    digits = draw(st.sampled_from([101, 500, 4301, 10_000, 100_000]))
    sign = draw(st.sampled_from(["", "-"]))
    number = sign + "9" * digits + draw(st.sampled_from(["", ".5", "e5", "e999999"]))
    path = draw(st.sampled_from(paths_of(doc)))
    text = dump(put(doc, path, MARK), draw(st.booleans()))
    return text.replace(f'"{MARK}"'.encode(), number.encode()).replace(
        MARK.encode(), number.encode()
    )


def bad_encoding(draw: st.DrawFn, doc: Any) -> bytes:
    text = dump(doc, draw(st.booleans()))
    how = draw(st.sampled_from(["bytes", "utf16", "utf16-nobom", "latin1", "surrogate", "nul"]))
    if how == "bytes":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.binary(min_size=1, max_size=8)) + text[at:]
    if how == "utf16":
        return text.decode().encode("utf-16")
    if how == "utf16-nobom":
        return text.decode().encode("utf-16-le")
    if how == "latin1":
        return text.replace(b"n1", "n\xe91".encode("latin-1"))
    if how == "surrogate":  # a lone surrogate escape: valid JSON/YAML text, unencodable string
        json_text = json.dumps(put(doc, draw(st.sampled_from(paths_of(doc))), MARK))
        return json_text.replace(MARK, "n\\udc80\\ud800").encode()
    return text.replace(b"\n", b"\n\x00", 1)


def alias_bomb(draw: st.DrawFn, doc: Any) -> bytes:
    """A billion-laughs bomb (``fan ** levels`` values), a self-referencing alias, or a chain
    of merge keys, used where a value is read (a label, a taint, a spec field)."""
    levels, fan = draw(st.integers(2, 12)), draw(st.integers(2, 10))
    shape = draw(st.sampled_from(["bomb", "self", "merge"]))
    if shape == "bomb":
        anchors = ["l0: &l0 [" + ", ".join(["lol"] * fan) + "]"]
        anchors += [
            f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan) + "]" for i in range(1, levels + 1)
        ]
        ref = f"*l{levels}"
    elif shape == "self":
        anchors, ref = ["loop: &loop [*loop, 1]"], "*loop"
    else:
        chain = levels * 40
        anchors = ["m0: &m0 {k0: 0}"]
        anchors += [f"m{i}: &m{i} {{<<: [*m{i - 1}], k{i}: {i}}}" for i in range(1, chain)]
        ref = f"*m{chain - 1}"
    docs = doc if isinstance(doc, list) else [doc]
    index = draw(st.integers(0, len(docs) - 1))
    path = draw(st.sampled_from(paths_of(docs[index])))
    target = yaml_with(docs[index], path, ref).decode()
    holder = "x-anchors:\n" + "".join(f"  {a}\n" for a in anchors)
    parts = [dump(d, False).decode() for d in docs]
    parts[index] = holder + target
    return "---\n".join(parts).encode()


def deep_nesting(draw: st.DrawFn, doc: Any) -> bytes:
    depth = draw(st.sampled_from([500, 990, 5_000, 100_000]))
    raw = draw(st.sampled_from(["[" * depth + "]" * depth, "{a: " * depth + "1" + "}" * depth]))
    return yaml_with(doc, draw(st.sampled_from(paths_of(doc))), raw)


def wrong_type(draw: st.DrawFn, doc: Any) -> bytes:
    path = draw(st.sampled_from(paths_of(doc)))
    return dump(put(doc, path, draw(st.sampled_from(JUNK_VALUES))), draw(st.booleans()))


def wrong_kind(draw: st.DrawFn, doc: Any) -> bytes:
    other = draw(st.sampled_from([nodes_doc(), pods_doc(), topology_docs(), [{"kind": "List"}]]))
    if draw(st.booleans()):
        return dump(other, draw(st.booleans()))
    kinds = draw(st.sampled_from(["Pod", "Node", "TrainingTopology", "ConfigMap", "", 5]))
    return dump(put(doc, draw(st.sampled_from(paths_of(doc))), {"kind": kinds}), False)


BREAKERS = {
    "yaml-tag": bad_tag,
    "huge-number": huge_number,
    "encoding": bad_encoding,
    "alias": alias_bomb,
    "deep-nesting": deep_nesting,
    "wrong-type": wrong_type,
    "wrong-kind": wrong_kind,
}


@st.composite
def hostile_files(draw: st.DrawFn) -> tuple[str, str, bytes]:
    """(file broken, class of breakage, bytes of the broken file)."""
    which, doc = draw(base_documents())
    name = draw(st.sampled_from(sorted(BREAKERS)))
    return which, name, BREAKERS[name](draw, doc)
