"""kubectl dumps (JSON or YAML, List or objects or streams) load into object dicts."""

from __future__ import annotations

import json

import pytest
import yaml

from fabricfit.fabric import documents
from fabricfit.fabric.documents import DocumentError, load_objects

NODE_A = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}}
NODE_B = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "b"}}
LIST = {
    "apiVersion": "v1",
    "kind": "List",
    "items": [NODE_A, NODE_B],
    "metadata": {"resourceVersion": ""},
}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(LIST, indent=4),
        yaml.safe_dump(LIST),
        json.dumps([NODE_A, NODE_B]),
        yaml.safe_dump(NODE_A) + "---\n" + yaml.safe_dump(NODE_B) + "---\n",
        yaml.safe_dump({"kind": "List", "items": [NODE_A]}) + "---\n" + yaml.safe_dump(NODE_B),
        "\n  " + json.dumps(LIST),  # leading whitespace still takes the JSON path
        "{kind: List, items: [{kind: Node, metadata: {name: a}},"
        " {kind: Node, metadata: {name: b}}]}",
    ],
    ids=[
        "json-list",
        "yaml-list",
        "json-array",
        "yaml-stream",
        "yaml-list-then-object",
        "json-ws",
        "yaml-flow",
    ],
)
def test_loads_every_shape(text: str) -> None:
    assert [o["metadata"]["name"] for o in load_objects(text)] == ["a", "b"]


def test_single_object_and_empty_list() -> None:
    assert load_objects(json.dumps(NODE_A)) == [NODE_A]
    assert load_objects(json.dumps({"kind": "NodeList", "items": []})) == []


def test_json_fast_path_does_not_touch_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: object, **__: object) -> None:
        raise AssertionError("YAML parser used for JSON input")

    monkeypatch.setattr(yaml, "load_all", fail)
    assert len(load_objects(json.dumps(LIST))) == 2


def test_uses_the_c_loader_when_available() -> None:
    expected = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    assert documents._LOADER is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the document is empty"),
        ("   \n", "the document is empty"),
        ('{"kind": "List", "items": [', "invalid JSON at line 1"),
        ("kind: List\nitems: [a, b\n", "invalid YAML at line"),
        ("key: [unclosed", "invalid YAML"),
        ("just a string", "document 1 is a str, not a Kubernetes object or List"),
        ("42", "document 1 is a int"),
        ('{"kind": "List", "items": [1]}', "document 1 items[0] is a int"),
        ('{"kind": "List", "items": "x"}', "document 1: items is not a list"),
        ('[{"kind": "Node"}, "x"]', "document 1[1] is a str"),
        ("a: 1\n---\n- 5\n", "document 2[0] is a int"),
        ("[" * 100_000, "nested too deeply"),
        ("a: " + "[" * 100_000, "invalid YAML"),
        ("a: !!python/object/apply:os.system [true]", "could not determine a constructor"),
    ],
)
def test_invalid_input_raises_one_line_document_error(text: str, message: str) -> None:
    with pytest.raises(DocumentError) as caught:
        load_objects(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)
