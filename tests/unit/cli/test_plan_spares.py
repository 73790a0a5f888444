"""``fabricfit plan`` keeps spare trays free and reports them (JSON ``spares``, text line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricfit.cli.main import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
NODES = str(FIXTURES / "nodes" / "native-gb200-2x18.yaml")
TOPOLOGY = FIXTURES / "plan" / "spares-gb200.yaml"
SPARES = ["gb200-s0-g0-n0016", "gb200-s0-g0-n0017", "gb200-s0-g1-n0034", "gb200-s0-g1-n0035"]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(["plan", *args])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _topology(tmp_path: Path, spares: str) -> str:
    text = TOPOLOGY.read_text(encoding="utf-8").replace("{nodesPerNvlinkDomain: 2}", spares)
    path = tmp_path / "tt.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_json_reports_the_spares_and_the_plan_avoids_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys, "--nodes", NODES, "--topology", str(TOPOLOGY), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["spares"] == {
        "per_nvlink_domain": 2,
        "source": "spec.placement.spares",
        "nodes": SPARES,
        "by_nvlink_domain": {
            "spine-0/rg-0/nvl-0": SPARES[:2],
            "spine-0/rg-1/nvl-1": SPARES[2:],
        },
    }
    planned = {p["node"] for p in result["pods"]}
    assert len(planned) == 16 and not planned & set(SPARES)
    assert len({n.rsplit("-", 2)[1] for n in planned}) == 1  # one rack: 16 of its 18 trays


def test_text_names_the_spares(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "--nodes", NODES, "--topology", str(TOPOLOGY))
    assert code == 0
    line = "spares: 2 per NVLink domain (spec.placement.spares), 4 nodes kept free: "
    assert f"{line}{', '.join(SPARES)}\n" in out


def test_the_fabric_file_setting_applies_when_the_spec_says_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    preset = Path(__file__).resolve().parents[3] / "operator/fabricfit/fabric/profiles/presets"
    profile = (preset / "gb200-nvl72.yaml").read_text(encoding="utf-8")
    profile = profile.replace("name: gb200-nvl72", "name: site-nvl72").replace(
        "spare_nodes_per_nvlink_domain: 0", "spare_nodes_per_nvlink_domain: 1"
    )
    (tmp_path / "site.yaml").write_text(profile, encoding="utf-8")
    topology = _topology(tmp_path, "null")
    args = ["--nodes", NODES, "--topology", topology, "--fabric-file", str(tmp_path / "site.yaml")]
    code, out, err = _run(capsys, *args, "--json")
    assert code == 0, err
    spares = json.loads(out)["spares"]
    assert spares["per_nvlink_domain"] == 1 and spares["source"] == "fabric site-nvl72"
    assert spares["nodes"] == [SPARES[1], SPARES[3]]
    code, out, _ = _run(capsys, *args)
    assert "spares: 1 per NVLink domain (fabric site-nvl72), 2 nodes kept free" in out


def test_without_spares_there_is_no_text_line_and_an_empty_json_object(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    topology = _topology(tmp_path, "{nodesPerNvlinkDomain: 0}")
    code, out, _ = _run(capsys, "--nodes", NODES, "--topology", topology)
    assert code == 0 and "spares:" not in out
    code, out, _ = _run(capsys, "--nodes", NODES, "--topology", topology, "--json")
    assert json.loads(out)["spares"] == {
        "per_nvlink_domain": 0,
        "source": "spec.placement.spares",
        "nodes": [],
        "by_nvlink_domain": {},
    }


def test_spares_that_leave_too_little_room_are_infeasible_with_the_reason(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    topology = _topology(tmp_path, "{nodesPerNvlinkDomain: 11}")
    code, out, _ = _run(capsys, "--nodes", NODES, "--topology", topology)
    assert code == 1
    assert "22 kept free as spares (11 per NVLink domain)" in out


@pytest.mark.parametrize(
    ("spares", "field"),
    [
        ("{nodesPerNvlinkDomain: -1}", "placement.spares.nodesPerNvlinkDomain"),
        ("{nodesPerNvlinkDomain: two}", "placement.spares.nodesPerNvlinkDomain"),
        ("{}", "placement.spares.nodesPerNvlinkDomain"),
        ("{perRack: 2}", "placement.spares.nodesPerNvlinkDomain"),
    ],
)
def test_invalid_spares_are_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, spares: str, field: str
) -> None:
    code, out, err = _run(capsys, "--nodes", NODES, "--topology", _topology(tmp_path, spares))
    assert code == 2 and out == ""
    assert field in err and err.count("\n") == 1, err
