"""The README is a newcomer's page: short, in order, and every claim it makes is checked here
against the code (the longer pages under docs/ are checked by test_docs.py)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import yaml

from fabricfit.api import constants
from fabricfit.fabric.profiles import PRESETS
from fabricfit.fabric.schemes import SCHEMES
from unit.doclinks import ROOT, broken_links, code_blocks, section

README = ROOT / "README.md"
MAX_LINES = 250
#: The newcomer's order of the README's sections.
SECTIONS = (
    "Try it offline in one minute",
    "The two set-up commands",
    "Install",
    "Label your nodes",
    "Your first job",
    "Kueue modes",
    "How accurate, and what it buys over Kueue",
    "Where to go next",
)


def text() -> str:
    return README.read_text(encoding="utf-8")


def test_readme_is_short_and_in_a_newcomers_order() -> None:
    lines = text().splitlines()
    assert len(lines) <= MAX_LINES, f"README has {len(lines)} lines (at most {MAX_LINES})"
    headings = [line.removeprefix("## ") for line in lines if line.startswith("## ")]
    assert tuple(headings) == SECTIONS


def test_exactly_two_setup_commands_and_ci_runs_the_test_one() -> None:
    (block,) = code_blocks(section(text(), "The two set-up commands"), "sh")
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^demo:", makefile, flags=re.M) and re.search(r"^test:", makefile, flags=re.M)
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in ci


def test_the_offline_example_prints_what_the_readme_shows() -> None:
    part = section(text(), "Try it offline in one minute")
    (commands,) = code_blocks(part, "sh")
    (shown,) = code_blocks(part, "text")
    lines = [line for line in commands.splitlines() if line.strip()]
    assert lines[0] == "make venv"
    argv = shlex.split(lines[1])
    assert argv[0] == ".venv/bin/fabricfit" and argv[1] == "plan"
    result = subprocess.run(
        [sys.executable, "-m", "fabricfit", *argv[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    printed = result.stdout.splitlines()
    for line in shown.splitlines():
        if line != "...":
            assert line in printed, f"README shows {line!r}; plan printed:\n{result.stdout}"
    assert "--topology deploy/samples/first-job.yaml" in lines[1]


def test_the_first_job_is_the_shipped_sample() -> None:
    (block,) = code_blocks(section(text(), "Your first job"), "yaml")
    sample = ROOT / "deploy" / "samples" / "first-job.yaml"
    assert block == sample.read_text(encoding="utf-8")
    topology, job = yaml.safe_load_all(block)
    assert topology["spec"]["workloadRef"]["name"] == job["metadata"]["name"]
    assert job["spec"]["suspend"] is True and job["spec"]["completionMode"] == "Indexed"
    (commands,) = code_blocks(section(text(), "Your first job"), "sh")
    assert f"kubectl apply -f {sample.relative_to(ROOT)}" in commands
    assert f"tt/{topology['metadata']['name']}" in commands


def label_commands() -> list[list[str]]:
    blocks = code_blocks(section(text(), "Label your nodes"), "sh")
    lines = [line for block in blocks for line in block.splitlines()]
    return [shlex.split(line) for line in lines if line.startswith("kubectl label node ")]


def test_label_examples_use_native_keys_and_known_fabrics() -> None:
    commands = label_commands()
    assert commands
    native = set(SCHEMES["native"].tier_keys.values())
    allowed = {key for keys in native for key in keys} | {constants.LABEL_FABRIC}
    for argv in commands:
        pairs = [a.split("=", 1) for a in argv[3:] if "=" in a]
        assert pairs, argv
        for key, value in pairs:
            assert key in allowed, key
            assert re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", value), value
            if key == constants.LABEL_FABRIC:
                assert value in PRESETS, value


def test_provider_label_keys_in_the_readme_are_read_by_a_scheme() -> None:
    table = section(text(), "Label your nodes").split("| platform |", 1)[1].split("\n\n", 1)[0]
    keys = set(re.findall(r"`([a-z0-9.-]+\.[a-z]+/[A-Za-z0-9_.-]+?)(?:`|…)", table))
    assert len(keys) >= 10
    known = {k for s in SCHEMES.values() for ks in s.tier_keys.values() for k in ks}
    known |= {k for s in SCHEMES.values() for k in s.keys}
    prefixes = tuple(p for s in SCHEMES.values() for p in s.prefixes)
    for key in keys:
        assert key in known or key.startswith(prefixes), key


def test_values_the_readme_names_exist_with_the_defaults_it_says() -> None:
    values = yaml.safe_load((ROOT / "charts" / "fabricfit" / "values.yaml").read_text())
    rows = re.findall(r"^\| `([^|]+)` \| ([^|]+) \|", section(text(), "Install"), flags=re.M)
    assert rows
    for keys, default in rows:
        for key in re.findall(r"[\w.]+", keys.replace("`", "")):
            node = values
            for part in key.split("."):
                assert part in node, key
                node = node[part]
            if default.startswith("`"):
                assert str(node) == default.strip("` "), (key, node, default)


def test_the_accuracy_paragraph_quotes_the_shipped_summary() -> None:
    summary = json.loads(
        (ROOT / "operator" / "fabricfit" / "calibrate" / "measured-accuracy.json").read_text()
    )
    regimes = summary["regimes"]
    fitted = sum(r["fitted_rows"] for r in regimes)
    met = sum(r["meets_targets"] for r in regimes)
    flat = " ".join(section(text(), "How accurate, and what it buys over Kueue").split())
    assert f"{summary['rows']} published nccl-tests rows ({fitted} fitted, " in flat
    assert f"{summary['rows'] - fitted} held out), {met} of its {len(regimes)} bands" in flat
    assert f"the {len(regimes) - met} it misses" in flat


def test_every_link_of_the_readme_resolves() -> None:
    assert broken_links(README) == []
    assert "docs/" in text()
