"""A platform's NCCL set-up (nccl_algorithms, nccl_protocols, nvls_enabled) masks the model's
choices as NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE mask NCCL's tuner (tuning.cc 537-538)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.cost import Collective, CostError, GroupShape, estimate_shape, summarize_group
from fabricfit.cost.nccl import algorithms
from fabricfit.fabric.profiles import FabricProfile, get_profile
from fabricfit.fabric.profiles.ncclsetup import MODEL_ALGORITHM, NCCL_ALGORITHMS, NCCL_PROTOCOLS
from fabricfit.fabric.topology import GpuSlot

H100 = get_profile("dgx-h100")
A100 = get_profile("dgx-a100")
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def shape(nodes: int, gpus: int = 8) -> GroupShape:
    """GPUs 0..gpus-1 of ``nodes`` HGX nodes under one leaf, one NIC per GPU."""
    return summarize_group(
        [GpuSlot(f"n{n}", j, j, f"n{n}", "su0", "s0") for n in range(nodes) for j in range(gpus)]
    )


def with_setup(profile: FabricProfile = H100, **setup: object) -> FabricProfile:
    return dataclasses.replace(profile, name=f"{profile.name}-setup", **setup)  # type: ignore[arg-type]


def test_unset_is_everything_nccl_considers() -> None:
    assert (H100.nccl_algorithms, H100.nccl_protocols, H100.nvls_enabled) == (None, None, True)
    assert algorithms(H100, forced=False) == {"ring", "tree", "nvls", "nvls-tree", "pat"}
    every = with_setup(nccl_algorithms=NCCL_ALGORITHMS, nccl_protocols=NCCL_PROTOCOLS)
    for size in (8, 64 * KIB, 4 * MIB, GIB):
        for nodes in (1, 2, 4):
            assert estimate_shape(Collective.ALL_REDUCE, size, shape(nodes), every) == (
                estimate_shape(Collective.ALL_REDUCE, size, shape(nodes), H100)
            )


@pytest.mark.parametrize("size", [8, 64 * KIB, 2 * MIB, 16 * MIB, 256 * MIB, 4 * GIB])
@pytest.mark.parametrize("nodes", [1, 2, 4, 16])
def test_simple_ring_tree_without_nvls_runs_nothing_else(size: int, nodes: int) -> None:
    # GCP's TCPXO set-up for installer v1.0.3: NCCL_ALGO=Ring,Tree NCCL_PROTO=Simple NVLS off
    tcpxo = with_setup(
        nccl_algorithms=("Tree", "Ring"), nccl_protocols=("Simple",), nvls_enabled=False
    )
    found = estimate_shape(Collective.ALL_REDUCE, size, shape(nodes), tcpxo)
    assert (found.algorithm in ("ring", "tree"), found.protocol) == (True, "Simple")
    for collective in (Collective.ALL_GATHER, Collective.REDUCE_SCATTER):
        assert estimate_shape(collective, size, shape(nodes), tcpxo).algorithm == "ring"


def test_nvls_off_leaves_ring_inside_a_node_and_refuses_a_forced_nvls() -> None:
    off = with_setup(nvls_enabled=False)
    assert estimate_shape(Collective.ALL_REDUCE, GIB, shape(1), H100).algorithm == "nvls"
    assert estimate_shape(Collective.ALL_REDUCE, GIB, shape(1), off).algorithm == "ring"
    assert estimate_shape(Collective.ALL_REDUCE, 64 * MIB, shape(2), off).algorithm != "nvls-tree"
    with pytest.raises(CostError, match="does not apply"):
        estimate_shape(Collective.ALL_REDUCE, GIB, shape(1), off, algorithm="nvls")


def test_a_forced_algorithm_replaces_the_platforms_nccl_algo() -> None:
    # a job that sets NCCL_ALGO itself overrides the platform's; NCCL_PROTO still applies
    ring_only = with_setup(nccl_algorithms=("Ring",), nccl_protocols=("Simple",))
    assert estimate_shape(Collective.ALL_REDUCE, 8, shape(8), ring_only).algorithm == "ring"
    tree = estimate_shape(Collective.ALL_REDUCE, 8, shape(8), ring_only, algorithm="tree")
    assert (tree.algorithm, tree.protocol) == ("tree", "Simple")


def test_nccl_proto_does_not_touch_p2p() -> None:
    # NCCL picks a p2p op's protocol by size (NCCL_P2P_LL_THRESHOLD), not from NCCL_PROTO
    simple = with_setup(nccl_protocols=("Simple",))
    for collective in (Collective.SEND_RECV, Collective.ALL_TO_ALL):
        for nodes in (1, 2):
            assert estimate_shape(collective, 4 * KIB, shape(nodes), simple) == estimate_shape(
                collective, 4 * KIB, shape(nodes), H100
            )


def test_ampere_runs_ll128_across_nodes_unless_its_profile_leaves_it_out() -> None:
    # NCCL enables LL128 by default where the NIC sits within the GPU's PCIe switch (typeInter <=
    # PATH_PXB, tuning.cc:518-531), as on every HGX/DGX A100 board; a system whose NICs hang off
    # the CPU states what NCCL runs there in its profile
    for nodes in (2, 4):
        found = estimate_shape(Collective.ALL_REDUCE, 4 * MIB, shape(nodes), A100)
        assert (found.algorithm, found.protocol) == ("tree", "LL128")
    behind_cpu = with_setup(A100, nccl_protocols=("LL", "Simple"))
    assert estimate_shape(Collective.ALL_REDUCE, 4 * MIB, shape(2), behind_cpu).protocol != "LL128"


def test_without_simple_the_simple_only_algorithms_are_gone() -> None:
    low = with_setup(nccl_protocols=("LL", "LL128"))
    for nodes in (1, 2):
        found = estimate_shape(Collective.ALL_REDUCE, GIB, shape(nodes), low)
        assert found.algorithm in ("ring", "tree") and found.protocol != "Simple"
    # PAT (Simple only): chosen at 4 nodes x 1 GPU, 1 MiB; gone without PAT or without Simple
    assert estimate_shape(Collective.ALL_GATHER, MIB, shape(4, 1), H100).algorithm == "pat"
    for masked in (with_setup(nccl_algorithms=("Ring",)), low):
        assert estimate_shape(Collective.ALL_GATHER, MIB, shape(4, 1), masked).algorithm == "ring"


SETUPS = st.builds(
    dict,
    nccl_algorithms=st.none()
    | st.sets(st.sampled_from(NCCL_ALGORITHMS)).map(
        lambda s: tuple(a for a in NCCL_ALGORITHMS if a in s or a == "Ring")
    ),
    nccl_protocols=st.none()
    | st.sets(st.sampled_from(NCCL_PROTOCOLS), min_size=1).map(
        lambda s: tuple(p for p in NCCL_PROTOCOLS if p in s)
    ),
    nvls_enabled=st.booleans(),
)


@settings(max_examples=200, deadline=None)
@given(
    SETUPS,
    st.sampled_from([Collective.ALL_REDUCE, Collective.ALL_GATHER, Collective.REDUCE_SCATTER]),
    st.integers(1, 1 << 34),
    st.sampled_from([(1, 8), (2, 8), (4, 8), (16, 1), (3, 4)]),
)
def test_the_choice_is_always_one_the_set_up_allows(
    setup: dict[str, object], collective: Collective, size: int, layout: tuple[int, int]
) -> None:
    profile = with_setup(**setup)
    found = estimate_shape(collective, size, shape(*layout), profile)
    names = profile.nccl_algorithms or NCCL_ALGORITHMS
    allowed = {MODEL_ALGORITHM[a] for a in names if a in MODEL_ALGORITHM}
    if not profile.nvls_enabled:
        allowed -= {"nvls", "nvls-tree"}
    assert found.algorithm in allowed
    assert found.protocol in (profile.nccl_protocols or NCCL_PROTOCOLS)
    assert found.seconds > 0
