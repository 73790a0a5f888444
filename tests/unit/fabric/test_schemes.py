"""Each label scheme maps realistic label sets onto raw tiers; auto picks schemes per cluster."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from fabricfit.fabric.schemes import PROVIDER_PRECEDENCE, SCHEMES, detect, read_node, resolve
from fabricfit.fabric.schemes.base import RawTiers

CLIQUE = "7b968a6d-c8aa-45e1-9e07-e1e51be99c31.1"
CLUSTER_UUID = "7b968a6d-c8aa-45e1-9e07-e1e51be99c31"
TG1 = "fabric.topograph.run/"
LEGACY = "network.topology.nvidia.com/"
GKE = "cloud.google.com/gce-topology-"
EKS = "topology.k8s.aws/network-node-layer-"
OCI = "oci.oraclecloud.com/"
NATIVE = "topology.fabricfit.dev/"

CASES: list[tuple[str, str, Mapping[str, str], RawTiers]] = [
    # (case id, scheme, labels, expected raw tiers)
    (
        "native-all",
        "native",
        {
            NATIVE + "spine": "s1",
            NATIVE + "rail-group": "su1",
            NATIVE + "rack": "r1",
            NATIVE + "nvlink-domain": "nvl1",
        },
        RawTiers(spine="s1", rail_group="su1", rack="r1", nvlink_domain="nvl1"),
    ),
    ("native-none", "native", {"kubernetes.io/hostname": "n1"}, RawTiers()),
    ("native-ignores-clique", "native", {"nvidia.com/gpu.clique": CLIQUE}, RawTiers()),
    (
        "topograph-v1",
        "topograph",
        {
            TG1 + "tier-0": "leaf1",
            TG1 + "tier-1": "spine1",
            "accelerator.topograph.run/domain": "d1",
        },
        RawTiers(spine="spine1", rail_group="leaf1", nvlink_domain="d1"),
    ),
    (
        "topograph-v1-deep-tiers-fold-into-spine",
        "topograph",
        {TG1 + "tier-0": "l", TG1 + "tier-1": "s", TG1 + "tier-2": "c", TG1 + "tier-3": "dc"},
        RawTiers(spine="dc/c/s", rail_group="l"),
    ),
    (
        "topograph-v1-sub-domain-is-rack",
        "topograph",
        {
            "accelerator.topograph.run/domain": "nvl1",
            "accelerator.topograph.run/sub-domain": "nvl1.rack01",
        },
        RawTiers(rack="nvl1.rack01", nvlink_domain="nvl1"),
    ),
    (
        "topograph-v1-leaf-only",
        "topograph",
        {TG1 + "tier-0": "leaf7"},
        RawTiers(rail_group="leaf7"),
    ),
    (
        "topograph-v05",
        "topograph",
        {
            LEGACY + "accelerator": "nvl1",
            LEGACY + "leaf": "s1",
            LEGACY + "spine": "s2",
            LEGACY + "core": "s3",
        },
        RawTiers(spine="s3/s2", rail_group="s1", nvlink_domain="nvl1"),
    ),
    (
        "topograph-v01-block-is-leaf",
        "topograph",
        {LEGACY + "block": "b1", LEGACY + "spine": "s2", LEGACY + "datacenter": "dc"},
        RawTiers(spine="dc/s2", rail_group="b1"),
    ),
    (
        "topograph-legacy-spine-only",
        "topograph",
        {LEGACY + "spine": "s2"},
        RawTiers(spine="s2"),
    ),
    (
        "topograph-clique-fallback",
        "topograph",
        {TG1 + "tier-0": "leaf1", "nvidia.com/gpu.clique": CLIQUE},
        RawTiers(rail_group="leaf1", rack=CLUSTER_UUID, nvlink_domain=CLIQUE),
    ),
    (
        "topograph-v1-no-leaf-is-no-rail-group",
        "topograph",
        {TG1 + "tier-1": "s1", TG1 + "tier-2": "c1"},
        RawTiers(spine="c1/s1"),
    ),
    (
        "gke-block-only-is-a-spine",
        "gke",
        {GKE + "block": "b1"},
        RawTiers(spine="b1"),
    ),
    (
        "oke-network-block-only-is-a-spine",
        "oke",
        {OCI + "rdma.network_block_id": "nb1"},
        RawTiers(spine="nb1"),
    ),
    (
        "coreweave-superpod-only-is-a-spine",
        "coreweave",
        {"ib.coreweave.cloud/superpod": "3"},
        RawTiers(spine="3"),
    ),
    (
        "gfd",
        "gfd",
        {"nvidia.com/gpu.clique": CLIQUE},
        RawTiers(rack=CLUSTER_UUID, nvlink_domain=CLIQUE),
    ),
    (
        "gke-a3",
        "gke",
        {GKE + "block": "b1", GKE + "subblock": "sb1", GKE + "host": "h1"},
        RawTiers(spine="b1", rail_group="sb1"),
    ),
    (
        "gke-a4x-subblock-is-nvl72",
        "gke",
        {
            GKE + "block": "b1",
            GKE + "subblock": "sb1",
            "node.kubernetes.io/instance-type": "a4x-highgpu-4g",
        },
        RawTiers(spine="b1", rail_group="sb1", nvlink_domain="sb1"),
    ),
    (
        "gke-a4x-clique-wins",
        "gke",
        {
            GKE + "block": "b1",
            GKE + "subblock": "sb1",
            "cloud.google.com/gke-accelerator": "nvidia-gb200",
            "nvidia.com/gpu.clique": CLIQUE,
        },
        RawTiers(spine="b1", rail_group="sb1", rack=CLUSTER_UUID, nvlink_domain=CLIQUE),
    ),
    (
        "eks-3-layers",
        "eks",
        {EKS + "1": "nn-a", EKS + "2": "nn-b", EKS + "3": "nn-c"},
        RawTiers(spine="nn-a/nn-b", rail_group="nn-c"),
    ),
    (
        "eks-4-layers",
        "eks",
        {EKS + "1": "nn-a", EKS + "2": "nn-b", EKS + "3": "nn-c", EKS + "4": "nn-d"},
        RawTiers(spine="nn-a/nn-b/nn-c", rail_group="nn-d"),
    ),
    (
        "eks-ultraserver",
        "eks",
        {
            EKS + "1": "nn-a",
            EKS + "2": "nn-b",
            EKS + "3": "nn-c",
            "topology.k8s.aws/ultraserver-id": "us-1",
        },
        RawTiers(spine="nn-a/nn-b", rail_group="nn-c", nvlink_domain="us-1"),
    ),
    (
        "eks-p6e-capacity-block-is-nvl",
        "eks",
        {
            EKS + "3": "nn-c",
            "topology.k8s.aws/capacity-block-id": "cr-1",
            "node.kubernetes.io/instance-type": "p6e-gb200.36xlarge",
        },
        RawTiers(rail_group="nn-c", nvlink_domain="cr-1"),
    ),
    (
        "eks-p5-capacity-block-is-not-nvl",
        "eks",
        {
            EKS + "3": "nn-c",
            "topology.k8s.aws/capacity-block-id": "cr-1",
            "node.kubernetes.io/instance-type": "p5.48xlarge",
        },
        RawTiers(rail_group="nn-c"),
    ),
    (
        "oke",
        "oke",
        {
            OCI + "rdma.hpc_island_id": "af7ubvouuyq",
            OCI + "rdma.network_block_id": "7xmzl4p4wba",
            OCI + "rdma.local_block_id": "4tjxbt4s6ua",
            OCI + "host.rack_id": "rk1",
            OCI + "host.gpu_memory_fabric_id": "tkj3zctga",
        },
        RawTiers(
            spine="af7ubvouuyq/7xmzl4p4wba",
            rail_group="4tjxbt4s6ua",
            rack="rk1",
            nvlink_domain="tkj3zctga",
        ),
    ),
    (
        "coreweave-ib",
        "coreweave",
        {
            "ib.coreweave.cloud/fabric": "f1",
            "ib.coreweave.cloud/superpod": "3",
            "ib.coreweave.cloud/leafgroup": "12",
            "node.coreweave.cloud/rack": "a7",
            "ds.coreweave.com/nvlink.domain": "nvl-9",
        },
        RawTiers(spine="f1/3", rail_group="12", rack="a7", nvlink_domain="nvl-9"),
    ),
    (
        "coreweave-roce-backend",
        "coreweave",
        {"backend.coreweave.cloud/fabric": "f2", "backend.coreweave.cloud/leafgroup": "lg4"},
        RawTiers(spine="f2", rail_group="lg4"),
    ),
]


@pytest.mark.parametrize(
    ("scheme", "labels", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_scheme_reads_tiers(scheme: str, labels: Mapping[str, str], expected: RawTiers) -> None:
    reading = SCHEMES[scheme].read(labels)
    assert reading.tiers == expected
    assert reading.problems == ()


PROBLEM_CASES: list[tuple[str, str, Mapping[str, str], RawTiers, str]] = [
    # (case id, scheme, labels, expected tiers, fragment of the one expected problem)
    (
        "native-illegal-value-dropped",
        "native",
        {NATIVE + "rail-group": "su 1", NATIVE + "spine": "s1"},
        RawTiers(spine="s1"),
        "not a valid label value",
    ),
    (
        "native-slash-would-break-qualification",
        "native",
        {NATIVE + "rack": "a/b"},
        RawTiers(),
        "not a valid label value",
    ),
    (
        "native-typo-key",
        "native",
        {NATIVE + "rail_group": "su1"},
        RawTiers(),
        "unknown fabricfit label(s) topology.fabricfit.dev/rail_group",
    ),
    (
        "topograph-tier-gap",
        "topograph",
        {TG1 + "tier-0": "l1", TG1 + "tier-2": "c1"},
        RawTiers(rail_group="l1"),
        "switch tier tier-1 is missing below tier-2",
    ),
    (
        "topograph-generations-disagree-newest-wins",
        "topograph",
        {TG1 + "tier-0": "l1", TG1 + "tier-1": "s1", LEGACY + "leaf": "l9", LEGACY + "spine": "s1"},
        RawTiers(spine="s1", rail_group="l1"),
        "topograph v0.5 labels (spine=s1, leaf=l9, domain=-) disagree with v1",
    ),
    (
        "topograph-leaf-and-block-disagree",
        "topograph",
        {LEGACY + "leaf": "l1", LEGACY + "block": "b1"},
        RawTiers(rail_group="l1"),
        "v0.1 labels",
    ),
    (
        "topograph-sub-domain-without-domain",
        "topograph",
        {"accelerator.topograph.run/sub-domain": "nvl1.rack01", TG1 + "tier-0": "l1"},
        RawTiers(rail_group="l1"),
        "sub-domain is set without a domain",
    ),
    (
        "gfd-clique-without-dot",
        "gfd",
        {"nvidia.com/gpu.clique": "nodot"},
        RawTiers(nvlink_domain="nodot"),
        "is not <ClusterUUID>.<CliqueID>",
    ),
    (
        "eks-layer-gap-keeps-finest",
        "eks",
        {EKS + "1": "nn-a", EKS + "3": "nn-c"},
        RawTiers(rail_group="nn-c"),
        "network-node-layer-2 is missing",
    ),
]


@pytest.mark.parametrize(
    ("scheme", "labels", "expected", "problem"),
    [c[1:] for c in PROBLEM_CASES],
    ids=[c[0] for c in PROBLEM_CASES],
)
def test_scheme_reports_bad_labels(
    scheme: str, labels: Mapping[str, str], expected: RawTiers, problem: str
) -> None:
    reading = SCHEMES[scheme].read(labels)
    assert reading.tiers == expected
    assert len(reading.problems) == 1
    assert problem in reading.problems[0]


def test_topograph_agreeing_generations_are_silent() -> None:
    labels = {
        TG1 + "tier-0": "l1",
        TG1 + "tier-1": "s1",
        LEGACY + "leaf": "l1",
        LEGACY + "spine": "s1",
    }
    reading = SCHEMES["topograph"].read(labels)
    assert reading == SCHEMES["topograph"].read({TG1 + "tier-0": "l1", TG1 + "tier-1": "s1"})


def test_topograph_ignores_non_canonical_tier_keys() -> None:
    reading = SCHEMES["topograph"].read(
        {TG1 + "tier-01": "x", TG1 + "tier-0": "l1", TG1 + "other": "y"}
    )
    assert reading.tiers == RawTiers(rail_group="l1")


AUTO_CASES: list[tuple[str, list[dict[str, str]], str, bool, str | None]] = [
    # (case id, label sets, reported name, native overlay, provider)
    ("empty-cluster", [], "native", False, None),
    ("no-topology-labels", [{"kubernetes.io/hostname": "a"}], "native", False, None),
    ("rails-alone-is-not-native", [{NATIVE + "rails": "8"}], "native", False, None),
    ("native-only", [{NATIVE + "rail-group": "su1"}], "native", True, None),
    ("gfd-only", [{"nvidia.com/gpu.clique": CLIQUE}], "gfd", False, "gfd"),
    (
        "topograph-beats-gke",
        [{GKE + "block": "b"}, {TG1 + "tier-0": "l"}],
        "topograph",
        False,
        "topograph",
    ),
    ("legacy-topograph", [{LEGACY + "block": "b"}], "topograph", False, "topograph"),
    (
        "gke-beats-gfd",
        [{GKE + "subblock": "s", "nvidia.com/gpu.clique": CLIQUE}],
        "gke",
        False,
        "gke",
    ),
    ("eks", [{EKS + "3": "nn"}], "eks", False, "eks"),
    ("oke", [{OCI + "rdma.local_block_id": "x"}], "oke", False, "oke"),
    ("coreweave", [{"ib.coreweave.cloud/leafgroup": "1"}], "coreweave", False, "coreweave"),
    ("native-over-eks", [{EKS + "3": "nn"}, {NATIVE + "spine": "s"}], "native", True, "eks"),
]


@pytest.mark.parametrize(
    ("label_sets", "name", "native", "provider"),
    [c[1:] for c in AUTO_CASES],
    ids=[c[0] for c in AUTO_CASES],
)
def test_auto_detection(
    label_sets: list[dict[str, str]], name: str, native: bool, provider: str | None
) -> None:
    for ordering in (label_sets, label_sets[::-1]):
        resolution = detect(ordering)
        assert resolution.name == name
        assert resolution.native is native
        assert (resolution.provider.name if resolution.provider else None) == provider


def test_precedence_lists_every_provider_scheme_once() -> None:
    assert sorted(PROVIDER_PRECEDENCE) == sorted(set(SCHEMES) - {"native"})


def test_explicit_scheme_reads_only_its_own_keys() -> None:
    labels = {NATIVE + "rail-group": "su1", TG1 + "tier-0": "leaf1"}
    for scheme, rail_group in (("native", "su1"), ("topograph", "leaf1"), ("gke", None)):
        resolution = resolve(scheme, [labels])
        assert read_node(resolution, labels).tiers.rail_group == rail_group


def test_native_overlay_wins_per_level_and_provider_fills_the_rest() -> None:
    labels = {NATIVE + "rail-group": "su1", TG1 + "tier-0": "leaf1", TG1 + "tier-1": "spine1"}
    reading = read_node(resolve("auto", [labels]), labels)
    assert reading.tiers == RawTiers(spine="spine1", rail_group="su1")
    assert reading.native == RawTiers(rail_group="su1")
    assert reading.provider == RawTiers(spine="spine1", rail_group="leaf1")
