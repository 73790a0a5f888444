"""``--json``, ``-o json`` and ``-o yaml`` on every command that prints one object: the same
object, the JSON text unchanged, the two flags exclusive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fabricfit.cli import release
from fabricfit.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
NODES = str(ROOT / "tests" / "fixtures" / "nodes" / "native-h100-16.json")
COMMANDS = {
    "plan": [
        "plan",
        "--nodes",
        NODES,
        "--topology",
        str(ROOT / "tests" / "fixtures" / "plan" / "dense-native.yaml"),
    ],
    "cost": [
        "cost",
        "--fabric",
        "dgx-h100",
        "--collective",
        "all-reduce",
        "--size",
        "1GiB",
        "--nodes",
        "4",
        "--gpus-per-node",
        "8",
    ],
    "inspect": ["inspect", "--nodes", NODES],
    "simulate": [
        "simulate",
        "--nodes",
        str(ROOT / "benchmarks" / "traces" / "nodes-h100-64.yaml"),
        "--trace",
        str(ROOT / "benchmarks" / "traces" / "small.yaml"),
        "--placer",
        "spread",
    ],
    "version": ["version"],
}


def _out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) in (0, 1)
    out, err = capsys.readouterr()
    assert err == ""
    return out


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_json_and_yaml_print_the_same_object(
    capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    as_json = _out(capsys, [*argv, "--json"])
    assert _out(capsys, [*argv, "-o", "json"]) == as_json
    assert _out(capsys, [*argv, "--output=json"]) == as_json
    as_yaml = _out(capsys, [*argv, "-o", "yaml"])
    assert not as_yaml.lstrip().startswith("{")
    assert yaml.safe_load(as_yaml) == json.loads(as_json)
    assert _out(capsys, [*argv, "--output", "yaml"]) == as_yaml


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_json_and_output_are_exclusive(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--json", "-o", "yaml"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1
    assert "argument -o/--output: not allowed with argument --json" in err


def test_release_prints_its_report_as_yaml_too(capsys: pytest.CaptureFixture[str]) -> None:
    found = release.Released(topologies=["a/t"], pods=["a/p-0", "a/p-0"])
    release._report(found, dry_run=True, fmt="json")
    as_json = capsys.readouterr().out
    assert json.loads(as_json) == {"dryRun": True, "topologies": ["a/t"], "pods": ["a/p-0"]}
    release._report(found, dry_run=True, fmt="yaml")
    assert yaml.safe_load(capsys.readouterr().out) == json.loads(as_json)


def test_yaml_escapes_what_json_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    from fabricfit.cli.output import emit

    body = {"node": "gpu-\udcff-é", "seconds": float("inf")}
    emit(body, "yaml")
    text = capsys.readouterr().out
    assert text.isascii()
    assert yaml.safe_load(text) == {"node": "gpu-\udcff-é", "seconds": float("inf")}
