"""The demo's options, read from environment variables (one clear line when one is wrong)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from fabricfit_dev.cluster import fakenodes
from fabricfit_dev.demo.workloads import NVL72_POOL

# The demo simulates 8-GPU, 8-NIC nodes, one NVLink domain per node, or, for gb200-nvl72,
# 4-GPU compute trays in racks of 18 that each form one NVLink domain.
GB200 = "gb200-nvl72"
TRAYS_PER_RACK = 18
FABRICS = (
    "dgx-a100",
    "dgx-h100",
    "dgx-h200",
    "dgx-b200",
    "h100-leaf-spine-2to1",
    "h100-rail-only",
    GB200,
)
JOB_SETS = ("auto", "standard", "small")
#: GB200 NVL72 racks added next to the main nodes for the job that shows fabricfit's edge.
NVL72_RACKS = 2
#: What the comparison column is: the real Kueue (started with the control plane for ``kueue``,
#: used when already running for ``auto``) or the package's emulation of its TAS BestFit.
PEERS = ("auto", "kueue", "emulated")

HELP = """\
make demo: a simulated GPU cluster on the local control plane, with fabricfit placing jobs.

Options (environment variables; make passes them through, e.g. FABRICFIT_DEMO_SCHEME=gke make demo):
  FABRICFIT_DEMO_SPINES        spines (default 2)
  FABRICFIT_DEMO_RAIL_GROUPS   rail groups per spine (default 2)
  FABRICFIT_DEMO_NODES         8-GPU nodes per rail group (default 16; gb200-nvl72: 4-GPU
                               trays per rail group, default 18, one NVL72 rack)
  FABRICFIT_DEMO_RACK_SIZE     nodes per rack (default 4; gb200-nvl72: always 18 trays, the
                               rack is the NVLink domain)
  FABRICFIT_DEMO_SCHEME        node label scheme: native, topograph, gke, eks, oke, coreweave
                               (default native)
  FABRICFIT_DEMO_FABRIC        fabric preset: dgx-a100, dgx-h100, dgx-h200, dgx-b200 (full
                               bisection), h100-leaf-spine-2to1, h100-rail-only, or gb200-nvl72
                               (4-GPU trays, 18 per NVL72 rack; default dgx-h100)
  FABRICFIT_DEMO_TENANT_SHARE  share of GPUs already taken by other tenants' pods, 0 to 0.9
                               (default 0.3)
  FABRICFIT_DEMO_SEED          seed of the tenants' pseudo-random layout (default 7)
  FABRICFIT_DEMO_NVL72_RACKS   GB200 NVL72 racks (18 four-GPU trays each, a spine and node pool
                               of their own, 30 % of their GPUs held by other tenants) added
                               for one more job, TP8·PP2·DP4 in 16 whole-tray pods (default 2;
                               0 leaves them out)
  FABRICFIT_DEMO_JOBS          job set: standard (dense TP8·PP4·DP4 in 8-GPU pods, MoE
                               TP2·PP4·DP8·EP8 and a fine-tune TP4·DP4 in 4-GPU pods: 26 nodes'
                               worth of GPUs), small (6 nodes), or auto (standard when it fits,
                               default)
  FABRICFIT_DEMO_PEER          the comparison: kueue (start the real Kueue v0.19.2 with the
                               control plane and place each job with it first), emulated (the
                               package's emulation of Kueue TAS BestFit), or auto (the real one
                               when the control plane already runs Kueue, default)
  FABRICFIT_DEMO_SVG           where to write the SVG
                               (default: <cluster state dir>/demo-placement.svg)
  FABRICFIT_STATE_DIR          cluster state directory (default ~/.cache/fabricfit/cluster)

The cluster stays up afterwards; stop it with: make demo-down (or hack/cluster down).
"""


class OptionError(ValueError):
    """An invalid option value (reported as one line, exit 2)."""


@dataclass(frozen=True)
class Options:
    spines: int = 2
    rail_groups: int = 2
    nodes: int = 16
    rack_size: int = 4
    scheme: str = "native"
    fabric: str = "dgx-h100"
    tenant_share: float = 0.3
    seed: int = 7
    jobs: str = "auto"
    svg: str | None = None
    peer: str = "auto"
    nvl72_racks: int = NVL72_RACKS

    @property
    def gpus_per_node(self) -> int:
        return 4 if self.fabric == GB200 else 8

    def fake_fabric(self) -> fakenodes.FakeFabric:
        if self.fabric == GB200:  # trays; each rack of 18 is one NVLink domain
            return fakenodes.FakeFabric(
                spines=self.spines,
                rail_groups_per_spine=self.rail_groups,
                nodes_per_rail_group=self.nodes,
                nodes_per_rack=TRAYS_PER_RACK,
                nvlink_domain_nodes=TRAYS_PER_RACK,
                gpus_per_node=4,
                nics_per_node=4,
                scheme=self.scheme,
                fabric=self.fabric,
                prefix="gb200",
                pool="demo",
            )
        return fakenodes.FakeFabric(
            spines=self.spines,
            rail_groups_per_spine=self.rail_groups,
            nodes_per_rail_group=self.nodes,
            nodes_per_rack=self.rack_size,
            scheme=self.scheme,
            fabric=self.fabric,
            prefix="dgx",
            pool="demo",
        )

    def nvl72_fabric(self) -> fakenodes.FakeFabric | None:
        """The NVL72 racks after the main nodes (one rail group per rack), or None."""
        if self.nvl72_racks == 0:
            return None
        return fakenodes.FakeFabric(
            spines=1,
            rail_groups_per_spine=self.nvl72_racks,
            nodes_per_rail_group=TRAYS_PER_RACK,
            nodes_per_rack=TRAYS_PER_RACK,
            nvlink_domain_nodes=TRAYS_PER_RACK,
            gpus_per_node=4,
            nics_per_node=4,
            scheme=self.scheme,
            fabric=GB200,
            prefix="nvl72",
            pool=NVL72_POOL,
            origin=fakenodes.following(self.fake_fabric()),
            clique=True,
        )


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name, "").strip() or str(default)
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"{name} must be an integer, got {raw!r}") from None
    if not low <= value <= high:
        raise OptionError(f"{name} must be between {low} and {high}, got {value}")
    return value


def _choice(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    value = env.get(name, "").strip() or default
    if value not in allowed:
        raise OptionError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _share(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip() or str(default)
    try:
        value = float(raw)
    except ValueError:
        raise OptionError(f"{name} must be a number between 0 and 0.9, got {raw!r}") from None
    if not 0.0 <= value <= 0.9:
        raise OptionError(f"{name} must be between 0 and 0.9, got {raw}")
    return value


def from_env(env: Mapping[str, str] = os.environ) -> Options:
    """The options, or :class:`OptionError` naming the first bad variable."""
    fabric = _choice(env, "FABRICFIT_DEMO_FABRIC", "dgx-h100", FABRICS)
    gb200 = fabric == GB200
    options = Options(
        spines=_int(env, "FABRICFIT_DEMO_SPINES", 2, 1, 16),
        rail_groups=_int(env, "FABRICFIT_DEMO_RAIL_GROUPS", 2, 1, 32),
        nodes=_int(env, "FABRICFIT_DEMO_NODES", TRAYS_PER_RACK if gb200 else 16, 1, 256),
        rack_size=_int(env, "FABRICFIT_DEMO_RACK_SIZE", TRAYS_PER_RACK if gb200 else 4, 1, 64),
        scheme=_choice(env, "FABRICFIT_DEMO_SCHEME", "native", fakenodes.SCHEMES),
        fabric=fabric,
        tenant_share=_share(env, "FABRICFIT_DEMO_TENANT_SHARE", 0.3),
        seed=_int(env, "FABRICFIT_DEMO_SEED", 7, 0, 2**31),
        jobs=_choice(env, "FABRICFIT_DEMO_JOBS", "auto", JOB_SETS),
        svg=env.get("FABRICFIT_DEMO_SVG", "").strip() or None,
        peer=_choice(env, "FABRICFIT_DEMO_PEER", "auto", PEERS),
        nvl72_racks=_int(env, "FABRICFIT_DEMO_NVL72_RACKS", NVL72_RACKS, 0, 8),
    )
    nodes = options.spines * options.rail_groups * options.nodes
    if nodes > 2048:
        raise OptionError(f"the demo cluster would have {nodes} nodes; keep it to 2048 or fewer")
    return options
