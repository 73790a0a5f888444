"""The hardware a log names: what the parser reads (rank lines, NCCL_DEBUG=INFO lines) and the
base preset it picks — never an algorithm the hardware lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricfit.calibrate.hardware import (
    GENERATIONS,
    HardwareError,
    apply_log_facts,
    choose_base,
    contradictions,
    generation_of,
    merge,
    without_missing_nvls,
)
from fabricfit.calibrate.logs import parse_log
from fabricfit.calibrate.ncclinfo import HardwareScan, LogHardware
from fabricfit.cost import Collective
from fabricfit.fabric.profiles import PRESETS, get_profile

LOGS = Path(__file__).resolve().parents[2] / "fixtures" / "nccl-tests"

# NCCL_DEBUG=INFO lines as NCCL 2.2x prints them (formats: ncclinfo's table, with their sources)
IB = (
    "host:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB "
    "[3]mlx5_3:1/IB [RO]; OOB ib0:10.0.0.1<0>"
)
ROCE16 = "h:1:1 [0] NCCL INFO NET/IB : Using " + " ".join(
    f"[{i}]mlx5_{i}:1/RoCE" for i in range(16)
)
EFA = "h:25:66 [0] NCCL INFO NET/OFI Selected Provider is efa (found 32 nics)"


def _scan(*lines: str) -> LogHardware:
    scan = HardwareScan()
    for line in lines:
        assert scan.line(line), line
    return scan.result()


def test_nccl_info_lines_give_nics_network_nvls_and_channels() -> None:
    hw = _scan(
        IB,
        "h:1:1 [0] NCCL INFO Using network IB",
        "h:1:1 [0] NCCL INFO NVLS multicast support is not available on dev 0",
        "h:1:1 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p "
        "channels, 32 p2p channels per peer",
        "h:1:1 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
    )
    assert (hw.transport, hw.nics_per_node, hw.network) == ("IB", 4, "IB")
    assert (hw.nvls_available, hw.coll_channels, hw.nvls_channels) == (False, 24, 0)
    assert hw.multi_node_nvlink is False
    assert _scan(EFA).transport == "efa" and _scan(EFA).nics_per_node == 32
    assert _scan(ROCE16).transport == "RoCE" and _scan(ROCE16).nics_per_node == 16
    # newer NCCL adds rail and plane ids before the link layer
    assert _scan("NCCL INFO NET/IB : Using [0]mlx5_0:1:0/IB [1]mlx5_1:1::2/IB").nics_per_node == 2
    sockets = _scan("NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0> [1]eth1:10.0.1.1<0>")
    assert (sockets.transport, sockets.nics_per_node) == ("Socket", 2)
    assert not HardwareScan().line("h:1:1 [0] NCCL INFO Connected all rings")


def test_the_first_value_seen_wins() -> None:
    hw = _scan(IB, ROCE16)
    assert (hw.transport, hw.nics_per_node) == ("IB", 4)


def test_a_log_with_info_lines_states_its_hardware() -> None:
    text = (LOGS / "a100-2x8-oci-roce-all-reduce.log").read_text(encoding="utf-8")
    log = parse_log(f"{ROCE16}\n{text}", "oci.log", Collective.ALL_REDUCE)
    assert log.hardware.gpu_models == ("NVIDIA A100-SXM4-40GB",)
    assert log.hardware.nics_per_node == 16
    old = parse_log(
        (LOGS / "a100-2x8-abci-all-reduce.log").read_text(encoding="utf-8"),
        "abci.log",
        Collective.ALL_REDUCE,
    )
    assert old.hardware.gpu_models == ("A100-SXM4-40GB",)  # nccl-tests before 2.10: no "NVIDIA"


@pytest.mark.parametrize(
    ("model", "base"),
    [("NVIDIA A100-SXM4-40GB", "dgx-a100"), ("A100-SXM4-80GB", "dgx-a100"),
     ("NVIDIA H100 80GB HBM3", "dgx-h100"), ("NVIDIA H200", "dgx-h200"),
     ("NVIDIA H20", "dgx-h100"), ("NVIDIA H800", "dgx-h100"), ("NVIDIA B200", "dgx-b200"),
     ("NVIDIA GB200", "gb200-nvl72"), ("NVIDIA A800-SXM4-80GB", "dgx-a100")],
)  # fmt: skip
def test_the_gpu_model_picks_its_boards_preset(model: str, base: str) -> None:
    choice = choose_base(LogHardware(gpu_models=(model,)))
    assert choice.profile.name == base and choice.why.startswith(f"base fabric {base} (")


@pytest.mark.parametrize(
    ("model", "reason"),
    [("NVIDIA A100-PCIE-40GB", "PCIe cards have no NVSwitch"),
     ("NVIDIA H100 PCIe", "PCIe cards"), ("NVIDIA H100 NVL", "PCIe cards"),
     ("NVIDIA GH200 480GB", "Grace Hopper"), ("Tesla V100-SXM2-32GB", "no preset describes")],
)  # fmt: skip
def test_hardware_no_preset_describes_asks_for_fabric(model: str, reason: str) -> None:
    with pytest.raises(HardwareError, match=reason) as found:
        choose_base(LogHardware(gpu_models=(model,)))
    assert str(found.value).endswith("pass --fabric BASE")


def test_no_model_or_two_boards_ask_for_fabric() -> None:
    with pytest.raises(HardwareError, match="name no GPU model"):
        choose_base(LogHardware())
    with pytest.raises(HardwareError, match="different boards"):
        choose_base(LogHardware(gpu_models=("NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3")))


def test_nvls_only_where_nvswitch_can_reduce() -> None:
    """Every board the table names runs NVLS exactly when it is Hopper or Blackwell: never on
    A100 (NVSwitch gen 2), and never from a PCIe card or a Grace Hopper node (no base)."""
    for gen in GENERATIONS:
        if gen.base is not None:
            base = PRESETS[gen.base]
            assert base.nvls == (base.arch in ("hopper", "blackwell")), gen.name
            assert not (gen.name in ("A100", "A800") and base.nvls)


def test_efa_makes_an_h100_an_aws_p5_and_nothing_else() -> None:
    h100 = LogHardware(gpu_models=("NVIDIA H100 80GB HBM3",), transport="efa", nics_per_node=32)
    choice = choose_base(h100)
    assert choice.profile.name == "aws-p5" and "EFA" in choice.why
    assert choice.profile.nics_per_node == 8  # 32 EFA devices, 4 per GPU: the preset's 8 rails
    assert choice.notes == (
        "NICs per node: 32 efa devices in the logs (aws-p5's 8 x 400 Gb/s kept)",
    )
    assert (
        choose_base(LogHardware(gpu_models=("NVIDIA H100 80GB HBM3",))).profile.name == "dgx-h100"
    )
    with pytest.raises(HardwareError, match="EFA"):
        choose_base(LogHardware(gpu_models=("NVIDIA A100-SXM4-40GB",), transport="efa"))


def test_the_logs_nics_and_nvls_are_applied_to_the_base() -> None:
    a100 = ("NVIDIA A100-SXM4-40GB",)
    four = choose_base(LogHardware(gpu_models=a100, transport="IB", nics_per_node=4))
    assert four.profile.nics_per_node == 4 and any("4 IB NICs" in n for n in four.notes)
    ports = choose_base(LogHardware(gpu_models=a100, transport="RoCE", nics_per_node=16))
    assert (ports.profile.nics_per_node, ports.profile.nic_ports_per_rail) == (8, 2)
    silent = choose_base(LogHardware(gpu_models=a100))
    assert silent.profile.nics_per_node == 8 and "the logs list none" in silent.notes[0]
    off = LogHardware(gpu_models=("NVIDIA H100 80GB HBM3",), nvls_available=False)
    assert choose_base(off).profile.nvls_enabled is False
    # NCCL_NVLS_ENABLE=0 in the run's environment says the same line: the cluster keeps NVLS
    assert choose_base(off, nvls_set_by_env=True).profile.nvls_enabled is True


def test_a_base_named_by_hand_is_warned_about_and_never_runs_nvls_the_board_lacks() -> None:
    a100 = LogHardware(gpu_models=("NVIDIA A100-SXM4-40GB",), transport="IB", nics_per_node=4)
    h100 = get_profile("dgx-h100")
    found = contradictions(h100, a100)
    assert any("ampere, dgx-h100 is hopper" in line for line in found)
    assert any("no NVLink SHARP" in line for line in found)
    assert any("4 NICs per node, dgx-h100 has 8" in line for line in found)
    assert without_missing_nvls(h100, a100).nvls_enabled is False
    assert contradictions(get_profile("dgx-a100"), a100) == [
        "the logs list 4 NICs per node, dgx-a100 has 8"
    ]
    profile, _ = apply_log_facts(get_profile("dgx-a100"), a100)
    assert contradictions(profile, a100) == []


def test_merge_keeps_every_model_and_the_first_fact() -> None:
    merged = merge(
        [LogHardware(gpu_models=("A",), nics_per_node=4), LogHardware(gpu_models=("B",))]
    )
    assert merged.gpu_models == ("A", "B") and merged.nics_per_node == 4
    assert generation_of("nvidia h100 80gb hbm3") is not None
