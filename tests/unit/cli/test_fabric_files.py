"""Custom profiles from the CLI: ``--fabric-file`` on cost and plan, ``--fabric-dir`` on plan;
a bad file is exit 2 and one line naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fabricfit.cli.fabrics import read_profile_dir
from fabricfit.cli.main import main
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.profiles.catalog import dump_profile

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NODES = FIXTURES / "nodes" / "native-h100-16.json"
TOPOLOGY = FIXTURES / "plan" / "dense-native.yaml"
COST = ["cost", "--collective", "all-reduce", "--size", "1GiB", "--nodes", "4"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def write_profile(path: Path, name: str, **changes: object) -> Path:
    doc = yaml.safe_load(dump_profile(get_profile("dgx-h100")))
    doc.update(name=name, **changes)
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_cost_prices_a_custom_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = write_profile(tmp_path / "slow.yaml", "slow-h100", nic_gbit_per_s=100.0)
    _, preset, _ = run(capsys, *COST, "--gpus-per-node", "8", "--fabric", "dgx-h100", "--json")
    code, custom, err = run(
        capsys, *COST, "--gpus-per-node", "8", "--fabric-file", str(slow), "--json"
    )
    assert code == 0, err
    assert json.loads(custom)["fabric"] == "slow-h100"
    assert json.loads(custom)["seconds"] > json.loads(preset)["seconds"]


def test_a_bad_profile_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write_profile(tmp_path / "bad.yaml", "bad-h100", nic_efficiency=7)
    code, out, err = run(capsys, *COST, "--gpus-per-node", "8", "--fabric-file", str(bad))
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert str(bad) in err and "'nic_efficiency'" in err


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"nccl_protocols": "Simple,LL256"}, "'nccl_protocols'"),
        ({"nccl_algorithms": ["Tree"]}, "'nccl_algorithms'"),
        ({"nvls_enabled": "off"}, "'nvls_enabled'"),
    ],
)
def test_a_bad_nccl_set_up_names_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, object], field: str
) -> None:
    bad = write_profile(tmp_path / "bad.yaml", "bad-h100", **changes)
    code, out, err = run(capsys, *COST, "--gpus-per-node", "8", "--fabric-file", str(bad))
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert str(bad) in err and field in err


def test_cost_follows_the_profiles_nccl_set_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    simple = write_profile(
        tmp_path / "simple.yaml", "simple-h100", nccl_protocols="Simple", nvls_enabled=False
    )
    code, out, err = run(
        capsys, *COST, "--gpus-per-node", "8", "--fabric-file", str(simple), "--json"
    )
    assert code == 0, err
    body = json.loads(out)
    assert (body["protocol"], body["algorithm"] in ("ring", "tree")) == ("Simple", True)
    code, out, err = run(
        capsys, *COST, "--gpus-per-node", "8", "--fabric-file", str(simple), "--algorithm", "nvls"
    )
    assert code == 2 and "nvls_enabled: false" in err


def test_plan_uses_the_file_and_reports_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = write_profile(tmp_path / "mine.yaml", "mine")
    args = ["plan", "--nodes", str(NODES), "--topology", str(TOPOLOGY), "--json"]
    code, out, err = run(capsys, *args, "--fabric-file", str(mine))
    body = json.loads(out)
    assert code in (0, 1), err
    assert body["fabric"] == "mine" and body["fabric_reason"].startswith("--fabric-file")


def test_plan_fabric_dir_lets_labels_name_custom_profiles(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "fabrics"
    folder.mkdir()
    write_profile(folder / "site.yaml", "site-h100")
    nodes = json.loads(NODES.read_text(encoding="utf-8"))
    for item in nodes["items"]:
        item["metadata"].setdefault("labels", {})["topology.fabricfit.dev/fabric"] = "site-h100"
    dump = tmp_path / "nodes.json"
    dump.write_text(json.dumps(nodes), encoding="utf-8")
    spec = yaml.safe_load(TOPOLOGY.read_text(encoding="utf-8"))
    spec["spec"].pop("fabric", None)
    topology = tmp_path / "tt.yaml"
    topology.write_text(yaml.safe_dump(spec), encoding="utf-8")
    args = ["plan", "--nodes", str(dump), "--topology", str(topology), "--json"]
    code, _, err = run(capsys, *args)
    assert code == 2 and "site-h100" in err and "names no known fabric profile" in err
    code, out, err = run(capsys, *args, "--fabric-dir", str(folder))
    assert code in (0, 1), err
    assert json.loads(out)["fabric"] == "site-h100"


LAUGHS = (
    "[&a [x, x, x, x, x, x, x, x, x, x], "
    + ", ".join(
        f"&{b} [" + ", ".join([f"*{a}"] * 10) + "]"
        for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "]"
)


def _hostile(path: Path, key: str, value: str) -> Path:
    text = dump_profile(get_profile("dgx-h100")).replace("name: dgx-h100", "name: site-h100")
    lines = [f"{key}: {value}" if line.startswith(f"{key}:") else line for line in text.split("\n")]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("nvls", "!!bool maybe", "'maybe' is not a valid !!bool"),
        ("arch", LAUGHS, "YAML aliases expand the document by more than 1,000,000 values"),
        ("arch", "2020-01-01", "got a timestamp"),
    ],
    ids=["tag", "billion-laughs", "date"],
)
def test_a_hostile_profile_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: str, message: str
) -> None:
    """--fabric-file and --fabric-dir read profiles with the bounded loader: a YAML tag was
    exit 3 (KeyError) and a billion-laughs profile ran for 40 s in 1.6 GB."""
    folder = tmp_path / "fabrics"
    folder.mkdir()
    bad = _hostile(folder / "site.yaml", key, value)
    code, out, err = run(capsys, *COST, "--gpus-per-node", "8", "--fabric-file", str(bad))
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert str(bad) in err and message in err and len(err) < 300
    plan = ["plan", "--nodes", str(NODES), "--topology", str(TOPOLOGY), "--fabric-dir", str(folder)]
    code, out, err = run(capsys, *plan)
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert message in err


def test_the_operator_keeps_a_hostile_profile_as_refused_with_its_reason(tmp_path: Path) -> None:
    """The operator reads its profile ConfigMap as a directory and keeps running: the file is
    refused with the loader's one line, for jobs that name it."""
    _hostile(tmp_path / "site.yaml", "arch", LAUGHS)
    catalog = read_profile_dir(str(tmp_path), strict=False)
    assert "site-h100" not in catalog
    assert "aliases expand the document" in catalog.refused["site"]
