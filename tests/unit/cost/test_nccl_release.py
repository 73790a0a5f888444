"""The NCCL release a platform runs (``nccl_version``) sets the tuner constants the model chooses
with: NVLS-tree's network hop was 14 µs until 2.28.7 and NVLS-tree had no per-channel cap before
2.28 (tuning.cc of v2.24.3-1 … v2.29.7-1), so older releases pick NVLS-tree at smaller sizes.
What an algorithm costs once chosen does not depend on the release."""

from __future__ import annotations

import dataclasses

import pytest

from fabricfit.cost import Collective, GroupShape, estimate_shape, summarize_group
from fabricfit.cost.nccl import (
    MODELLED_RELEASE,
    NET_US,
    PER_CHANNEL_NVLS_TREE,
    SIMPLE,
    nccl_release,
    nvls_tree_channel_caps,
    tuner_net_hop_us,
)
from fabricfit.fabric.profiles import get_profile
from fabricfit.fabric.topology import GpuSlot

H100 = get_profile("dgx-h100")
MIB = 1 << 20


def on(version: str | None) -> object:
    return dataclasses.replace(H100, name=f"h100-{version}", nccl_version=version)


def shape(nodes: int, gpus: int = 8) -> GroupShape:
    return summarize_group(
        [GpuSlot(f"n{n}", j, j, f"n{n}", "su0", "s0") for n in range(nodes) for j in range(gpus)]
    )


@pytest.mark.parametrize(
    ("version", "hop", "capped"),
    [
        (None, 20.9, True),
        ("2.30.7", 20.9, True),
        ("2.28.9", 20.9, True),
        ("2.28.7", 14.0, True),
        ("2.28.3", 14.0, True),
        ("2.27.7", 14.0, False),
        ("2.26.2", 14.0, False),
        ("2.21.5", 14.0, False),
    ],
)
def test_the_releases_constants(version: str | None, hop: float, capped: bool) -> None:
    profile = on(version)
    assert tuner_net_hop_us("nvls-tree", SIMPLE, profile) == hop
    assert tuner_net_hop_us("tree", SIMPLE, profile) == NET_US["tree"][SIMPLE]
    caps = nvls_tree_channel_caps(profile)
    assert (caps == PER_CHANNEL_NVLS_TREE["hopper"]) is capped


def test_unset_is_the_release_the_tables_follow() -> None:
    assert nccl_release(H100) == MODELLED_RELEASE == (2, 30, 7)


def test_on_four_nodes_an_older_release_runs_nvls_tree_from_a_few_mib() -> None:
    # three 4x8 H100 runs on 2.24.3 and 2.26.2 jump between 1 and 2 MiB where 2.30.7's tuner
    # would keep tree LL128 to 8 MiB
    for size in (2 * MIB, 4 * MIB, 8 * MIB):
        now = estimate_shape(Collective.ALL_REDUCE, size, shape(4), H100)
        old = estimate_shape(Collective.ALL_REDUCE, size, shape(4), on("2.26.2"))
        assert (now.algorithm, now.protocol) == ("tree", "LL128")
        assert old.algorithm == "nvls-tree"
    assert estimate_shape(Collective.ALL_REDUCE, MIB // 2, shape(4), on("2.26.2")).algorithm == (
        "tree"
    )


@pytest.mark.parametrize("algorithm", ["ring", "tree", "nvls-tree"])
def test_a_forced_algorithm_costs_the_same_on_every_release(algorithm: str) -> None:
    for size in (MIB, 64 * MIB):
        times = {
            estimate_shape(
                Collective.ALL_REDUCE, size, shape(4), on(v), algorithm=algorithm
            ).seconds
            for v in (None, "2.26.2", "2.28.3")
        }
        assert len(times) == 1
