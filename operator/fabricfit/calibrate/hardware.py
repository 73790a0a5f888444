"""The base profile a calibration starts from: the hardware the logs name (pure).

Theory of operation
-------------------
A fit only moves efficiencies and latencies; the hardware under them — NVLink generation, whether
NVSwitch can reduce in-switch (NVLS), NICs per node, the network — must be right before it
starts, or the fit bends the numbers it may move to hide a missing NIC or an algorithm the
machine lacks. So the base is chosen from what the logs state (:mod:`fabricfit.calibrate.ncclinfo`),
never from which preset happens to predict the rows best:

1. the GPU model of the rank lines picks the board (:data:`GENERATIONS`, first match wins; PCIe
   cards and Grace Hopper nodes have no NVSwitch board among the presets, so they pick none);
2. the network the logs name refines it: AWS's EFA (aws-ofi-nccl's ``Selected Provider is
   efa``) makes an H100/H200 board ``aws-p5``; EFA with any other GPU is a machine no preset
   describes;
3. the logs' facts are applied to the base (:func:`apply_log_facts`): RDMA NICs per node
   (NCCL's ``NET/IB : Using`` list; more ports than GPUs are ports of the base's rails, as on
   OCI's A100), NVLS off where NCCL printed that multicast is not available.

No GPU model in the logs, GPUs of different boards, or a board no preset describes: no base,
and :class:`HardwareError` asks for ``--fabric``. A base named with ``--fabric`` is kept, but
:func:`contradictions` says where the logs disagree with it, and NVLS is switched off where the
logs' hardware cannot run it (NVLink SHARP needs NVSwitch gen 3: Hopper and Blackwell boards).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fabricfit.calibrate.measurements import Measurement
from fabricfit.calibrate.ncclinfo import LogHardware
from fabricfit.fabric.profiles import PRESETS, FabricProfile


class HardwareError(ValueError):
    """The logs name no hardware a preset describes (one line, asking for ``--fabric``)."""


@dataclass(frozen=True)
class Generation:
    """A GPU model as the rank lines name it, and the preset of its board (None: none)."""

    pattern: str  # searched in the device name, upper case
    name: str
    base: str | None
    why: str
    nvlink_gb_per_s: float | None = None  # the board's NVLink per direction, where not the base's


# First match wins: the PCIe and Grace Hopper entries come before the SXM names they contain
# (GB200 first: its trays are never PCIe cards).
GENERATIONS: tuple[Generation, ...] = (
    Generation(
        r"GB200",
        "GB200",
        "gb200-nvl72",
        "GB200 NVL72: 4-GPU trays in one 72-GPU NVLink 5 domain, NVSwitch with NVLink SHARP",
    ),
    Generation(
        r"PCIE|\bNVL\b",
        "PCIe card",
        None,
        "PCIe cards have no NVSwitch (NVLink bridges join pairs at most) and no preset",
    ),
    Generation(
        r"GH200",
        "GH200",
        None,
        "a Grace Hopper node has one GPU and no NVSwitch outside an NVL32 rack; no preset",
    ),
    Generation(
        r"B200", "B200", "dgx-b200", "HGX B200: NVLink 5 through NVSwitch with NVLink SHARP"
    ),
    Generation(r"H200", "H200", "dgx-h200", "HGX H200: NVLink 4 through NVSwitch gen 3 with NVLS"),
    Generation(r"H100", "H100", "dgx-h100", "HGX H100: NVLink 4 through NVSwitch gen 3 with NVLS"),
    Generation(
        r"H20\b",
        "H20",
        "dgx-h100",
        "HGX H20: the H100's NVLink 4 (900 GB/s) and NVSwitch gen 3 with NVLS",
    ),
    Generation(
        r"H800",
        "H800",
        "dgx-h100",
        "HGX H800: an H100 board whose NVLink is cut to 400 GB/s both ways by export rules"
        " (NVIDIA's H800 figure as reported by philisun.com; Reuters reported ~300)",
        nvlink_gb_per_s=200.0,
    ),
    Generation(
        r"A800",
        "A800",
        "dgx-a100",
        "HGX A800: an A100 board whose NVLink is cut from 600 to 400 GB/s both ways"
        " (techpowerup.com, tomshardware.com)",
        nvlink_gb_per_s=200.0,
    ),
    Generation(
        r"A100",
        "A100",
        "dgx-a100",
        "HGX A100: NVLink 3 through NVSwitch gen 2, which has no NVLink SHARP",
    ),
)
EFA = "efa"
EFA_BASE = "aws-p5"  # p5 (H100), p5e/p5en (H200): 3,200 Gb/s of EFA (profiles.choice)
EFA_GPUS = ("H100", "H200")
RDMA = ("IB", "RoCE")


@dataclass(frozen=True)
class BaseChoice:
    profile: FabricProfile  # the base with the logs' facts applied
    why: str  # one line: which hardware the logs name and the base it picks
    notes: tuple[str, ...] = ()  # what the logs' facts changed in it, or could not say


def merge(found: Iterable[LogHardware]) -> LogHardware:
    """One cluster's facts from several logs: every GPU model named, else the first value."""
    models: set[str] = set()
    first: dict[str, Any] = {}
    for hw in found:
        models.update(hw.gpu_models)
        for key, value in dataclasses.asdict(hw).items():
            if key != "gpu_models" and value is not None:
                first.setdefault(key, value)
    return LogHardware(gpu_models=tuple(sorted(models)), **first)


def generation_of(model: str) -> Generation | None:
    upper = model.upper()
    return next((g for g in GENERATIONS if re.search(g.pattern, upper)), None)


def choose_base(hw: LogHardware, *, nvls_set_by_env: bool = False) -> BaseChoice:
    """The preset of the board the logs name, with their facts applied; HardwareError when the
    logs name none, several, or one no preset describes."""
    gen = _one_generation(hw)
    if gen.base is None:
        raise HardwareError(f"the logs' GPUs ({_models(hw)}): {gen.why}; pass --fabric BASE")
    base, why = gen.base, f"{gen.name} in the logs: {gen.why}"
    if hw.transport == EFA:
        if gen.name not in EFA_GPUS:
            raise HardwareError(
                f"the logs' {gen.name} GPUs run over AWS EFA: no preset describes that machine"
                f" ({EFA_BASE} is H100/H200); pass --fabric BASE"
            )
        base, why = EFA_BASE, f"{why}; EFA (aws-ofi-nccl) in the logs: AWS p5"
    profile = PRESETS[base]
    if gen.nvlink_gb_per_s is not None:
        profile = dataclasses.replace(profile, nvlink_gb_per_s=gen.nvlink_gb_per_s)
    profile, notes = apply_log_facts(profile, hw, nvls_set_by_env=nvls_set_by_env)
    return BaseChoice(profile, f"base fabric {base} ({why})", tuple(notes))


def _one_generation(hw: LogHardware) -> Generation:
    if not hw.gpu_models:
        raise HardwareError(
            "the logs name no GPU model (no '#  Rank ... device N [bus] NAME' lines); "
            "pass --fabric BASE"
        )
    found = {generation_of(m) for m in hw.gpu_models}
    if None in found:
        unknown = next(m for m in hw.gpu_models if generation_of(m) is None)
        raise HardwareError(f"no preset describes GPU {unknown[:60]!r}; pass --fabric BASE")
    gens = sorted((g for g in found if g is not None), key=lambda g: g.name)
    if len({(g.base, g.nvlink_gb_per_s) for g in gens}) > 1:
        raise HardwareError(
            f"the logs name GPUs of different boards ({_models(hw)}): calibrate one cluster at "
            "a time, or pass --fabric BASE"
        )
    return gens[0]


def _models(hw: LogHardware) -> str:
    return ", ".join(m[:40] for m in hw.gpu_models[:3])


def apply_log_facts(
    profile: FabricProfile, hw: LogHardware, *, nvls_set_by_env: bool = False
) -> tuple[FabricProfile, list[str]]:
    """``profile`` with the NICs and NVLS the logs state, and one note per change (or per fact
    the logs leave to the base). NCCL prints that NVLS is not available when the run's
    environment turned it off too (``nvls_set_by_env``): that is the run's set-up, not the
    cluster's, and leaves the base's."""
    notes: list[str] = []
    changes: dict[str, Any] = {}
    nics = hw.nics_per_node
    rails = f"{profile.name}'s {profile.nics_per_node} x {profile.nic_gbit_per_s:g} Gb/s kept"
    if nics is None:
        notes.append(f"NICs per node: the logs list none ({rails}; --nics-per-node sets the count)")
    elif hw.transport not in RDMA:
        notes.append(f"NICs per node: {nics} {hw.transport} devices in the logs ({rails})")
    elif nics <= profile.gpus_per_node and nics != profile.nics_per_node:
        changes["nics_per_node"] = nics
        notes.append(f"NICs per node: {nics} {hw.transport} NICs in the logs (line rate kept)")
    elif nics > profile.gpus_per_node and nics % profile.nics_per_node == 0:
        ports = nics // profile.nics_per_node
        if 1 <= ports <= 16 and ports != profile.nic_ports_per_rail:
            changes["nic_ports_per_rail"] = ports
            notes.append(
                f"NICs per node: {nics} {hw.transport} ports in the logs, {ports} per rail of"
                f" {profile.name}'s {profile.nics_per_node} (the rails' rate kept)"
            )
    if hw.nvls_available is False and profile.nvls and profile.nvls_enabled and not nvls_set_by_env:
        changes["nvls_enabled"] = False
        notes.append("NVLS: NCCL printed that NVLink SHARP multicast is not available (NVLS off)")
    return dataclasses.replace(profile, **changes), notes


def contradictions(profile: FabricProfile, hw: LogHardware) -> list[str]:
    """Where the logs disagree with a base named by hand (``--fabric``), one line each."""
    found: list[str] = []
    gens = {generation_of(m) for m in hw.gpu_models}
    bases = {PRESETS[g.base] for g in gens if g is not None and g.base is not None}
    archs = {b.arch for b in bases}
    if archs and profile.arch not in archs:
        found.append(
            f"the logs' GPUs ({_models(hw)}) are {'/'.join(sorted(archs))}, {profile.name} is"
            f" {profile.arch}"
        )
    if profile.nvls and bases and not any(b.nvls for b in bases):
        found.append(f"the logs' GPUs have no NVLink SHARP, {profile.name} has (NVLS off)")
    if (hw.transport == EFA) != (profile.name == EFA_BASE) and hw.transport is not None:
        found.append(f"the logs' network is {hw.transport}, {profile.name}'s is not")
    if hw.transport in RDMA and hw.nics_per_node and hw.nics_per_node < profile.nics_per_node:
        found.append(
            f"the logs list {hw.nics_per_node} NICs per node, {profile.name} has"
            f" {profile.nics_per_node}"
        )
    return found


def without_missing_nvls(profile: FabricProfile, hw: LogHardware) -> FabricProfile:
    """``profile`` with NVLS off where the logs' board has no NVLink SHARP (a base named by hand
    for logs of an A100 cluster must not predict NVLS)."""
    gens = {generation_of(m) for m in hw.gpu_models}
    bases = [PRESETS[g.base] for g in gens if g is not None and g.base is not None]
    if profile.nvls and bases and not any(b.nvls for b in bases):
        return dataclasses.replace(profile, nvls_enabled=False)
    return profile


def describe_hardware(hw: LogHardware, rows: Iterable[Measurement]) -> str:
    """One line: what the logs say about the hardware."""
    layouts = sorted({(m.nodes, m.gpus_per_node) for m in rows})
    gpus = "/".join(str(g) for g in sorted({g for _, g in layouts}))
    models = ", ".join(hw.gpu_models[:3]) or "GPU model not named"
    if hw.nics_per_node is not None:
        net = f"{hw.nics_per_node} {hw.transport} NICs per node"
    else:
        net = "NICs not listed"
    nvls = {True: "NVLS available", False: "NVLS not available", None: "NVLS not stated"}
    parts = [f"{models} x {gpus} per node", net, nvls[hw.nvls_available]]
    if hw.coll_channels is not None:
        parts.append(f"{hw.coll_channels} collective channels")
    counts = ", ".join(f"{n}x{g}" for n, g in layouts)
    return f"hardware in the logs: {'; '.join(parts)}; runs at {counts}"
