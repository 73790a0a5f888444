"""`fabricfit plan|inspect --resource-slices [--resource-claims]`: DRA-only nodes are planned on
(JSON and YAML dumps), claims already allocated keep their nodes out, pods claiming GPUs get
gpusPerPod from the claim template, and bad DRA input is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fabricfit.cli.main import main

DRA = Path(__file__).resolve().parents[2] / "fixtures" / "dra"
NODES = str(DRA / "nodes-h100-4.json")
SLICES = str(DRA / "resourceslices-h100-4.json")
CLAIMS = str(DRA / "resourceclaims-h100-4.json")
JOB = str(DRA / "job-claims.yaml")
BARE = str(Path(__file__).resolve().parents[2] / "fixtures" / "plan" / "bare-spec.yaml")


def _plan(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, object]]:
    code = main(["plan", "--nodes", NODES, "--topology", JOB, "--json", *extra])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_claimed_gpus_keep_their_nodes_out_of_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    code, body = _plan(capsys, "--resource-slices", SLICES, "--resource-claims", CLAIMS)
    assert code == 0
    # dra-h100-0 is held whole by tenant-a's claim, dra-h100-3 has 6 of 8 GPUs free.
    assert body["pods"] == [{"index": 0, "node": "dra-h100-1"}, {"index": 1, "node": "dra-h100-2"}]
    allocation = body["gpu_allocation"]
    assert isinstance(allocation, dict)
    assert allocation["claims"] == ["ResourceClaimTemplate/eight-gpus"]


def test_without_claims_the_plan_stays_in_one_rail_group(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, body = _plan(capsys, "--resource-slices", SLICES)
    assert code == 0
    assert body["pods"] == [{"index": 0, "node": "dra-h100-0"}, {"index": 1, "node": "dra-h100-1"}]


def test_a_yaml_dump_reads_like_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    slices = tmp_path / "slices.yaml"
    slices.write_text(yaml.safe_dump(json.loads(Path(SLICES).read_text())))
    claims = tmp_path / "claims.yaml"
    claims.write_text(yaml.safe_dump(json.loads(Path(CLAIMS).read_text())))
    code, body = _plan(capsys, "--resource-slices", str(slices), "--resource-claims", str(claims))
    assert code == 0 and body["pods"][0] == {"index": 0, "node": "dra-h100-1"}


def test_pods_claiming_gpus_fit_nowhere_without_slices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--nodes", NODES, "--topology", JOB]) == 1
    out = capsys.readouterr().out
    assert "4 no GPUs in DRA ResourceSlices (the pods claim their GPUs)" in out


def test_a_bare_spec_plans_on_dra_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--nodes", NODES, "--resource-slices", SLICES, "--topology", BARE])
    assert code == 0
    assert "fabricfit plan: PLACED" in capsys.readouterr().out


def test_inspect_counts_dra_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["inspect", "--nodes", NODES, "--resource-slices", SLICES, "--resource-claims", CLAIMS]
    assert main([*args, "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert (body["gpus"], body["freeGpus"], body["draNodes"]) == (32, 22, 4)
    assert main(args) == 0
    assert "GPUs of 4 nodes come from DRA ResourceSlices" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--resource-slices", NODES], "object 1 has kind 'Node', expected ResourceSlice"),
        (["--resource-slices", SLICES, "--resource-claims", SLICES], "expected ResourceClaim"),
        (["--resource-claims", CLAIMS], "--resource-claims needs --resource-slices"),
        (["--resource-slices", "/nonexistent/slices.json"], "cannot read resource slices file"),
    ],
)
@pytest.mark.parametrize("command", ["plan", "inspect"])
def test_bad_dra_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], command: str, args: list[str], fragment: str
) -> None:
    base = (
        ["plan", "--nodes", NODES, "--topology", JOB]
        if command == "plan"
        else ["inspect", "--nodes", NODES]
    )
    assert main([*base, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"fabricfit {command}: ") and err.count("\n") == 1
    assert fragment in err


def test_garbage_slices_file_is_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "slices.yaml"
    bad.write_text("items: [1, {")
    assert main(["inspect", "--nodes", NODES, "--resource-slices", str(bad)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_the_plan_names_every_ranks_gpu_and_the_nic_on_its_root(
    capsys: pytest.CaptureFixture[str],
) -> None:
    slices = str(DRA / "resourceslices-h100-4-nics.json")
    code = main(
        ["plan", "--nodes", NODES, "--topology", str(DRA / "job-devices.yaml"), "--json",
         "--resource-slices", slices, "--resource-claims", CLAIMS]
    )  # fmt: skip
    body = json.loads(capsys.readouterr().out)
    assert code == 0 and body["gpuChoice"] == "enforced"
    published = json.loads(Path(slices).read_text())["items"]
    roots = {
        (s["spec"]["pool"]["name"], d["name"]): d["attributes"]
        .get("resource.kubernetes.io/pcieRoot", {})
        .get("string")
        for s in published
        for d in s["spec"]["devices"]
    }
    taken = {("dra-h100-0", f"gpu-{i}") for i in range(8)}  # tenant-a's claim holds them
    named = [(a["node"], a["device"], a["nic"]) for a in body["assignments"]]
    assert len({(n, d) for n, d, _ in named}) == 16 and not {(n, d) for n, d, _ in named} & taken
    assert all(roots[(n, d)] == roots[(n, nic)] for n, d, nic in named)
    assert set(body["crossRail"]) == {"tensor", "context", "expert", "data", "pipeline"}


def test_a_device_plugin_plan_says_nothing_enforces_its_windows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    nodes = str(Path(__file__).resolve().parents[2] / "fixtures" / "nodes" / "native-h100-16.json")
    code = main(["plan", "--nodes", nodes, "--topology", BARE])
    out = capsys.readouterr().out
    assert code == 0
    assert "GPUs: not enforced: the device plugin picks" in out
    assert "rails: " in out
