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
    assert issubclass(documents._Loader, expected)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the document is empty"),
        ("   \n", "the document is empty"),
        ('{"kind": "List", "items": [', "invalid JSON at line 1"),
        ("kind: List\nitems: [a, b\n", "invalid YAML at line"),
        ("key: [unclosed", "invalid YAML"),
        ("just a string", "document 1 is a string, not a Kubernetes object or List"),
        ("42", "document 1 is a number"),
        ('{"kind": "List", "items": [1]}', "document 1 items[0] is a number"),
        ('{"kind": "List", "items": "x"}', "document 1: items is a string, not a list"),
        ('[{"kind": "Node"}, "x"]', "document 1[1] is a string"),
        ("a: 1\n---\n- 5\n", "document 2[0] is a number"),
        ("a: !!int x", "line 1, column 4: 'x' is not a valid !!int"),
        ("a: !!float x", "'x' is not a valid !!float"),
        ("a: !!bool maybe", "'maybe' is not a valid !!bool"),
        ("a: !!timestamp x", "'x' is not a valid !!timestamp"),
        ("a: !!binary xx", "invalid YAML at line 1"),
        ("a: " + "9" * 5000, "a number has more than 100 digits"),
        ("a: !!int " + "1" * 200, "a number has more than 100 digits"),
        ('{"a": ' + "9" * 5000 + "}", "a number has more than 100 digits"),
        ('[{"a": -' + "9" * 101 + "}]", "a number has more than 100 digits"),
        ("a: &a [*a]", "a YAML alias refers to the value that contains it"),
        ("a: &a {b: *a}", "a YAML alias refers to the value that contains it"),
        ("[" * 100_000, "nested too deeply"),
        ("a: " + "[" * 100_000, "invalid YAML"),
        ("a: !!python/object/apply:os.system [true]", "could not determine a constructor"),
    ],
    ids=lambda value: value[:24] if isinstance(value, str) else None,
)
def test_invalid_input_raises_one_line_document_error(text: str, message: str) -> None:
    with pytest.raises(DocumentError) as caught:
        load_objects(text)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)


def billion_laughs(levels: int, fan_out: int = 10) -> str:
    """A YAML alias bomb: level i lists level i-1 ``fan_out`` times (``fan_out ** levels``)."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * fan_out) + "]")
    return "\n".join([*lines, "kind: Node"]) + "\n"


def test_an_alias_bomb_is_refused_before_anything_expands_it() -> None:
    with pytest.raises(DocumentError, match="aliases expand the document by more than"):
        load_objects(billion_laughs(9))


def test_aliases_within_the_budget_load() -> None:
    assert load_objects(billion_laughs(4))[0]["kind"] == "Node"  # 10^4 values: fine
    text = "a: &x {b: [1, 2]}\nc: *x\nd: {<<: *x, e: 3}\n"
    assert load_objects(text) == [
        {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}, "d": {"b": [1, 2], "e": 3}}
    ]


def test_a_big_document_without_aliases_is_not_mistaken_for_a_bomb() -> None:
    items = [
        {"kind": "Node", "metadata": {"name": f"n{i}", "labels": {"a": "*"}}} for i in range(2000)
    ]
    text = yaml.safe_dump({"kind": "List", "items": items * 1})
    assert len(load_objects(text)) == 2000


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("kind: Node\n".encode("utf-16"), "kind: Node\n"),
        (b"\xef\xbb\xbfkind: Node\n", "kind: Node\n"),
        ("kind: Nöde\n".encode(), "kind: Nöde\n"),
    ],
)
def test_decode_text_follows_the_byte_order_mark(data: bytes, text: str) -> None:
    assert documents.decode_text(data) == text


def test_undecodable_bytes_are_one_line() -> None:
    with pytest.raises(DocumentError, match="not UTF-8 text \\(bad byte at offset 6\\)"):
        documents.decode_text(b"kind: \xff\xfe\xfd")


def test_require_kind_names_the_object_and_both_kinds() -> None:
    assert documents.require_kind([NODE_A, NODE_B], "Node") == [NODE_A, NODE_B]
    with pytest.raises(DocumentError, match="object 2 has no kind, expected Node"):
        documents.require_kind([NODE_A, {"metadata": {"name": "kindless"}}], "Node")
    with pytest.raises(DocumentError, match="object 2 has kind 'TrainingTopology', expected Node"):
        documents.require_kind([NODE_A, {"kind": "TrainingTopology"}], "Node")
    with pytest.raises(DocumentError, match="object 1 has kind a list, expected Pod"):
        documents.require_kind([{"kind": [1]}], "Pod")
