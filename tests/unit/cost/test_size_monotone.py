"""A larger message never finishes sooner, algorithm by algorithm; and what ``auto`` picks.

For every preset and a custom profile, every collective, every algorithm the hardware has and
every protocol the model prices it in, the predicted time of one (algorithm, protocol) is
non-decreasing in the message size — over any group shape and contention. The one exception is
NCCL's: a p2p op inside a node runs on more channels once it is large enough (enqueue.cc:921-926
@5067397c: ``min(nChannelsMin, divUp(bytes, minPartSize))`` channels, doubled while a part
exceeds ``maxPartSize``), so a larger send-recv can finish sooner where its channel count grows,
and only there.

``auto`` takes the fastest of the candidates NCCL's tuner leaves in the running; where a
candidate it does not run is faster, it is one NCCL's tuner rules out itself
(``fabricfit.cost.tuner``), each case named with the NCCL source line that makes NCCL do the
same (docs/concepts/bounds.md, "What auto picks").
"""

from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.cost import Collective, GroupShape, estimate_shape, p2p
from fabricfit.cost.collectives import ALGORITHMS, candidates
from fabricfit.cost.shape import CostError
from fabricfit.cost.tuner import SET_UP, ruled_out_by_nccl
from fabricfit.cost.tuner import TREE_TIMED_SLOWER as TREE
from fabricfit.fabric.profiles import PRESETS, FabricProfile, load_profile
from fabricfit.fabric.profiles.catalog import dump_profile
from unit.cost.test_properties import shapes

FORCED = [a for a in ALGORITHMS if a != "auto"]


def _custom() -> FabricProfile:
    doc = yaml.safe_load(dump_profile(PRESETS["gb200-nvl72"]))
    doc.update(name="custom-nvl36", gpus_per_nvlink_domain=36, nics_per_node=2, nvls=True)
    doc.update(leaf_oversubscription=3.0, max_collective_nics_per_domain=0.0)
    return load_profile(yaml.safe_dump(doc))


PROFILES = [*PRESETS.values(), _custom()]


def _priced(
    collective: Collective, size: int, shape: GroupShape, profile: FabricProfile, load: float
) -> dict[tuple[str, str], float]:
    """Seconds of every (algorithm, protocol) the model prices, forcing each algorithm."""
    found: dict[tuple[str, str], float] = {}
    for algorithm in FORCED:
        for c in candidates(collective, size, shape, profile, algorithm=algorithm, load=load):
            key = (c.algorithm, c.protocol)
            found[key] = min(found.get(key, math.inf), c.seconds)
    return found


def _p2p_channels(collective: Collective, size: int, shape: GroupShape) -> int:
    """Channels of one intra-node p2p op: send-recv's whole buffer, all-to-all's per peer."""
    per_op = size if collective is Collective.SEND_RECV else size // shape.ranks
    return p2p.p2p_nvlink_channels(per_op, shape.ranks)


# Sizes anywhere, and just below a power of two, where NCCL's tables step (a step up in
# efficiency is where a larger message could finish sooner).
SIZE = st.one_of(
    st.integers(1, 2**34),
    st.integers(6, 34).map(lambda k: 2**k - 2 ** max(k - 5, 0)),
)
FACTOR = st.one_of(st.floats(1.0001, 64.0), st.floats(1.0001, 1.1))


@settings(max_examples=800, deadline=None, derandomize=True)
@given(
    st.sampled_from(PROFILES),
    shapes(),
    st.sampled_from(list(Collective)),
    SIZE,
    FACTOR,
    st.sampled_from([1.0, 1.0, 2.0, 3.5]),
)
def test_one_algorithm_and_protocol_never_gets_faster_with_size(
    profile: FabricProfile,
    shape: GroupShape,
    collective: Collective,
    size: int,
    factor: float,
    load: float,
) -> None:
    larger = int(size * factor) + 1
    small = _priced(collective, size, shape, profile, load)
    large = _priced(collective, larger, shape, profile, load)
    for key in small.keys() & large.keys():
        if large[key] >= small[key] * (1 - 1e-12):
            continue
        intra_node_p2p = key[0] in ("p2p", "pairwise") and shape.nodes == 1
        more_channels = _p2p_channels(collective, larger, shape) > _p2p_channels(
            collective, size, shape
        )
        assert intra_node_p2p and more_channels, (profile.name, collective, key, size, larger)


SIZES = [2**k + extra for k in range(6, 34) for extra in (-(2 ** max(k - 5, 0)), 0)]


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_the_tree_correction_steps_no_longer_make_a_larger_all_reduce_faster(
    profile: FabricProfile,
) -> None:
    """NCCL's tree size correction is a power-of-two step (tuning.cc:623-646 @5067397c); read
    as wall time it made a 1 MiB all-reduce by tree/LL 18 % faster than a 0.9 MiB one (and
    NVLS-tree on x86 Blackwell likewise). Every size on a fine grid, on 2 to 64 domains."""
    gpus = profile.gpus_per_nvlink_domain if not profile.is_torus else 16
    for domains in (2, 3, 8, 64):
        shape = GroupShape(
            domains * gpus, domains, domains, gpus, gpus, gpus, gpus, 1, False, 1, True
        )
        if profile.is_torus:
            continue
        previous: dict[tuple[str, str], float] = {}
        for size in SIZES:
            now = _priced(Collective.ALL_REDUCE, size, shape, profile, 1.0)
            for key in now.keys() & previous.keys():
                assert now[key] >= previous[key] * (1 - 1e-12), (domains, key, size)
            previous = now


@settings(max_examples=600, deadline=None, derandomize=True)
@given(
    st.sampled_from(PROFILES),
    shapes(),
    st.sampled_from(list(Collective)),
    SIZE,
)
def test_auto_is_the_fastest_candidate_nccls_tuner_would_run(
    profile: FabricProfile, shape: GroupShape, collective: Collective, size: int
) -> None:
    """``auto`` is never slower than a forced algorithm, unless NCCL's tuner rules that one
    out itself (``tuner.ruled_out_by_nccl`` names how and the NCCL line)."""
    auto = estimate_shape(collective, size, shape, profile)
    for algorithm in FORCED:
        try:
            forced = estimate_shape(collective, size, shape, profile, algorithm=algorithm)
        except CostError:
            continue
        if forced.seconds >= auto.seconds * (1 - 1e-12):
            continue
        picked = (forced.algorithm, forced.protocol)
        why = ruled_out_by_nccl(collective.value, size, shape, profile, picked)
        assert why is not None, (profile.name, collective, size, shape, auto, forced)


@pytest.mark.parametrize(
    ("fabric", "shape", "collective", "size", "auto_runs", "faster", "why"),
    [
        # Ampere, 2 nodes: NCCL caps the tree per channel (23.6 GB/s) below its ring, so it runs
        # the ring; the tree, priced at what it moves, would be 2.4x faster (nccl-tests#160)
        ("dgx-a100", (16, 2, 2, 8, 8, 8, 8), "all-reduce", 16 << 20, "ring", "tree", TREE),
        # x86 Blackwell, 16 nodes: NCCL's NVLS-tree latency is a flat 25 us + hops and has no
        # pipeline fill, so it runs NVLS-tree at 16 MiB; the tree would be 3.4x faster
        ("gcp-a4", (128, 16, 16, 8, 8, 8, 8), "all-reduce", 16 << 20, "nvls-tree", "tree", TREE),
        # GCP A3 Mega's NCCL_ALGO=Tree,Ring leaves PAT out: NCCL runs the ring
        ("gcp-a3-mega", (64, 64, 64, 1, 1, 1, 1), "reduce-scatter", 1, "ring", "pat", SET_UP),
    ],
    ids=["a100-tree-capped", "b200-nvls-tree-fill", "a3-mega-no-pat"],
)
def test_where_auto_runs_the_slower_candidate_nccl_runs_it_too(
    fabric: str,
    shape: tuple[int, ...],
    collective: str,
    size: int,
    auto_runs: str,
    faster: str,
    why: str,
) -> None:
    ranks, nodes, domains, most, least, nics, per_node = shape
    group = GroupShape(ranks, nodes, domains, most, least, nics, per_node, 1, False, 1, True)
    profile = PRESETS[fabric]
    auto = estimate_shape(Collective(collective), size, group, profile)
    forced = estimate_shape(Collective(collective), size, group, profile, algorithm=faster)
    assert auto.algorithm == auto_runs
    assert forced.seconds * 1.3 < auto.seconds
    picked = (forced.algorithm, forced.protocol)
    assert ruled_out_by_nccl(collective, size, group, profile, picked) == why
