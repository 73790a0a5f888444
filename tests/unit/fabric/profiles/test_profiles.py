"""Fabric profiles: presets, lookup errors and validation of custom YAML profiles."""

from __future__ import annotations

import dataclasses
import re
from importlib import resources

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricfit.fabric.profiles import (
    DEFAULT_PROFILE,
    PRESETS,
    FabricProfile,
    ProfileError,
    get_profile,
    load_profile,
)
from fabricfit.fabric.profiles.catalog import dump_profile


def preset_text(name: str) -> str:
    return (
        resources.files("fabricfit.fabric.profiles")
        .joinpath("presets", f"{name}.yaml")
        .read_text("utf-8")
    )


def preset_doc(name: str) -> dict[str, object]:
    doc = yaml.safe_load(preset_text(name))
    assert isinstance(doc, dict)
    return doc


#: The presets the design contract names (a preset is one YAML file; these must stay).
DESIGN_PRESETS = frozenset(
    {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "tpu-v4", "tpu-v5p", "tpu-v5e"}
)


def test_every_design_preset_exists_with_sources() -> None:
    assert set(PRESETS) >= DESIGN_PRESETS
    assert DEFAULT_PROFILE in PRESETS
    for name, profile in PRESETS.items():
        assert profile.name == name
        assert profile.sources, name
        assert profile.is_torus == name.startswith("tpu-")


@pytest.mark.parametrize(
    ("name", "domain", "per_node", "nvls", "nic_gbit"),
    [
        ("dgx-a100", 8, 8, False, 200),
        ("dgx-h100", 8, 8, True, 400),
        ("dgx-h200", 8, 8, True, 400),
        ("dgx-b200", 8, 8, True, 400),
        ("gb200-nvl72", 72, 4, True, 400),
    ],
)
def test_gpu_presets_state_the_catalogue(
    name: str, domain: int, per_node: int, nvls: bool, nic_gbit: int
) -> None:
    p = get_profile(name)
    assert (p.gpus_per_nvlink_domain, p.gpus_per_node, p.nvls, p.nic_gbit_per_s) == (
        domain,
        per_node,
        nvls,
        nic_gbit,
    )
    assert 0.7 < p.nvlink_efficiency < 0.9 and 0.9 < p.nic_efficiency < 1.0


@pytest.mark.parametrize(
    ("name", "taper"), [("h100-leaf-spine-2to1", 2.0), ("h100-rail-only", 4.0)]
)
def test_tapered_h100_presets_differ_from_dgx_h100_only_above_the_leaf(
    name: str, taper: float
) -> None:
    """Same HGX H100 node as dgx-h100; only what leaving a rail group / rail costs differs."""
    base, p = get_profile("dgx-h100"), get_profile(name)
    assert (p.leaf_oversubscription, p.spine_oversubscription) == (taper, taper)
    same = {f.name for f in dataclasses.fields(p)} - {
        "_hash",
        "name",
        "description",
        "sources",
        "leaf_oversubscription",
        "spine_oversubscription",
    }
    assert {k: getattr(p, k) for k in same} == {k: getattr(base, k) for k in same}


def test_tpu_presets_state_torus_and_wraparound() -> None:
    v4, v5p, v5e = (
        get_profile("tpu-v4").torus,
        get_profile("tpu-v5p").torus,
        get_profile("tpu-v5e").torus,
    )
    assert v4 is not None and v5p is not None and v5e is not None
    assert (v4.dims, v4.wrap_rule, v4.ocs) == ((16, 16, 16), "cube", True)
    assert (v5e.dims, v5e.wrap_rule, v5e.ocs) == ((16, 16), "axis", False)
    assert v5p.ici_link_gb_per_s == 2 * v4.ici_link_gb_per_s


def test_unknown_preset_is_a_one_line_profile_error() -> None:
    with pytest.raises(ProfileError) as err:
        get_profile("dgx-h999")
    assert "\n" not in str(err.value) and "dgx-h100" in str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_round_trip_through_load_profile(name: str) -> None:
    assert load_profile(preset_text(name)) == PRESETS[name]
    assert hash(load_profile(preset_text(name))) == hash(PRESETS[name])


def test_profiles_hash_by_value() -> None:
    p = get_profile("dgx-h100")
    changed = dataclasses.replace(p, nics_per_node=4)
    assert changed != p and hash(changed) != hash(p)
    assert dataclasses.replace(changed, nics_per_node=8) == p


def _edit(preset: str, **changes: object) -> str:
    doc = preset_doc(preset)
    for key, value in changes.items():
        if value is ...:
            doc.pop(key, None)
        else:
            doc[key] = value
    return yaml.safe_dump(doc)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: [unclosed", "not valid YAML"),
        ("- a list", "mapping"),
        (_edit("dgx-h100", colour="green"), "unknown profile field 'colour'"),
        (_edit("dgx-h100", nics_per_node=...), "missing field 'nics_per_node'"),
        (_edit("dgx-h100", nics_per_node="eight"), "'nics_per_node' must be an integer"),
        (_edit("dgx-h100", nvlink_gb_per_s=True), "'nvlink_gb_per_s' must be a number"),
        (_edit("dgx-h100", nic_efficiency=1.5), "'nic_efficiency' must be within"),
        (_edit("dgx-h100", leaf_oversubscription=0.5), "'leaf_oversubscription' must be within"),
        (_edit("dgx-h100", nvlink_gb_per_s=float("nan")), "'nvlink_gb_per_s' must be within"),
        (_edit("dgx-h100", arch="volta"), "'arch' must be one of"),
        (_edit("dgx-h100", nvls="yes"), "'nvls' must be true or false"),
        (_edit("dgx-h100", nvls_efficiency=0.0), "nvls_efficiency must be > 0"),
        (_edit("dgx-h100", gpus_per_nvlink_domain=12), "multiple of gpus_per_node"),
        (_edit("dgx-h100", arch="tpu"), "'torus' is required exactly when arch is 'tpu'"),
        (_edit("tpu-v4", arch="hopper"), "'torus' is required exactly when arch is 'tpu'"),
        (_edit("tpu-v4", torus={"dims": [16, 16]}), "'ici_link_gb_per_s' must be a number"),
        (_edit("tpu-v4", torus="cube"), "'torus' must be a mapping"),
        (_edit("dgx-h100", sources="nccl"), "'sources' must be a list of strings"),
        (_edit("dgx-h100", name=""), "'name' must be a non-empty string"),
        (_edit("gb200-nvl72", spare_nodes_per_nvlink_domain=-1), "must be within \\[0, 1024\\]"),
        (_edit("gb200-nvl72", spare_nodes_per_nvlink_domain=1.5), "must be an integer"),
        (_edit("gb200-nvl72", spare_nodes_per_nvlink_domain=True), "must be an integer"),
        (_edit("gb200-nvl72", spare_nodes_per_nvlink_domain=18), "below the nodes of one NVLink"),
        (_edit("dgx-h100", spare_nodes_per_nvlink_domain=1), "\\(1 vs 1; spares apply to multi"),
        (_edit("tpu-v4", spare_nodes_per_nvlink_domain=1), "spare_nodes_per_nvlink_domain"),
        (_edit("dgx-h100", nccl_protocols="Simple,LL64"), "unknown name 'LL64'"),
        (_edit("dgx-h100", nccl_protocols=[]), "'nccl_protocols' enables nothing"),
        (_edit("dgx-h100", nccl_protocols="^LL,LL128,Simple"), "enables nothing"),
        (_edit("dgx-h100", nccl_protocols=7), "must be a list of names or NCCL's string"),
        (_edit("dgx-h100", nccl_algorithms="allreduce:tree"), "per-collective lists"),
        (_edit("dgx-h100", nccl_algorithms=["Tree", "NVLS"]), "must enable Ring"),
        (_edit("dgx-h100", nccl_algorithms=[["Ring"]]), "unknown name a list \\(one of"),
        (_edit("dgx-h100", nvls_enabled="0"), "'nvls_enabled' must be true or false"),
        (_edit("tpu-v4", nccl_protocols=["Simple"]), "TPU profile .* takes none of them"),
        (_edit("dgx-h100", net_plugin_latency_us=-1), "must be within \\[0.0, 10000.0\\]"),
        (_edit("dgx-h100", net_plugin_latency_us="75us"), "'net_plugin_latency_us' must be a"),
        (_edit("dgx-h100", net_plugin_latency_us=True), "'net_plugin_latency_us' must be a"),
        (_edit("tpu-v4", net_plugin_latency_us=75), "TPU profile .* takes none of them"),
        (_edit("dgx-h100", nccl_buffsize=4096), "must be within \\[65536, 1073741824\\]"),
        (_edit("dgx-h100", nccl_buffsize=8.5e6), "'nccl_buffsize' must be an integer"),
        (_edit("dgx-h100", nccl_buffsize="8M"), "'nccl_buffsize' must be an integer"),
        (_edit("tpu-v4", nccl_buffsize=1 << 23), "TPU profile .* takes none of them"),
        (_edit("dgx-h100", nvls_tree_efficiency=0), "must be within \\[0.05, 1.0\\]"),
        (_edit("dgx-h100", nvls_tree_efficiency=1.2), "must be within \\[0.05, 1.0\\]"),
        (_edit("dgx-h100", nvls_tree_efficiency="92%"), "'nvls_tree_efficiency' must be a"),
    ],
)
def test_bad_custom_profiles_are_rejected_with_one_line(text: str, message: str) -> None:
    with pytest.raises(ProfileError, match=message) as err:
        load_profile(text)
    assert "\n" not in str(err.value)


def test_spare_nodes_are_a_profile_setting() -> None:
    assert get_profile("gb200-nvl72").spare_nodes_per_nvlink_domain == 0
    assert "spare_nodes_per_nvlink_domain: 0" in preset_text("gb200-nvl72")
    site = load_profile(_edit("gb200-nvl72", name="site-nvl72", spare_nodes_per_nvlink_domain=2))
    assert site.spare_nodes_per_nvlink_domain == 2
    assert site != get_profile("gb200-nvl72")
    assert load_profile(_edit("gb200-nvl72", spare_nodes_per_nvlink_domain=17)) is not None
    assert get_profile("dgx-h100").spare_nodes_per_nvlink_domain == 0


def test_net_plugin_latency_is_the_plugins_reported_value() -> None:
    # NCCL's own IB and socket transports report 0 (net_ib/init.cc:558, net_socket.cc:174);
    # aws-ofi-nccl reports 75 us on p5 (platform-aws.c)
    assert get_profile("dgx-h100").net_plugin_latency_us == 0.0
    assert get_profile("aws-p5").net_plugin_latency_us == 75.0
    assert {p.net_plugin_latency_us for n, p in PRESETS.items() if n != "aws-p5"} == {0.0}
    site = load_profile(_edit("dgx-h100", name="site-efa", net_plugin_latency_us=35))
    assert site.net_plugin_latency_us == 35.0 and site != get_profile("dgx-h100")
    assert load_profile(_edit("tpu-v4", net_plugin_latency_us=0)) == get_profile("tpu-v4")


def test_nccl_buffsize_is_the_platforms_simple_buffer() -> None:
    # NCCL's default Simple buffer is 4 MiB (init.cc); the p5 run's sbatch and GCP's TCPXO set-up
    # set NCCL_BUFFSIZE=8388608
    assert get_profile("dgx-h100").nccl_buffsize == 1 << 22
    assert (
        get_profile("aws-p5").nccl_buffsize == get_profile("gcp-a3-mega").nccl_buffsize == 8 << 20
    )
    others = {p.nccl_buffsize for n, p in PRESETS.items() if n not in ("aws-p5", "gcp-a3-mega")}
    assert others == {1 << 22}
    site = load_profile(_edit("dgx-h100", name="site-buf", nccl_buffsize=1 << 24))
    assert site.nccl_buffsize == 1 << 24 and site != get_profile("dgx-h100")
    assert load_profile(dump_profile(site)) == site
    assert load_profile(_edit("tpu-v4", nccl_buffsize=1 << 22)) == get_profile("tpu-v4")


def test_nccl_set_up_reads_as_nccl_reads_its_environment() -> None:
    # NCCL's names, case-insensitive, as a list or NCCL's own string ("^" = all but)
    unset = get_profile("dgx-h100")
    assert (unset.nccl_algorithms, unset.nccl_protocols, unset.nvls_enabled) == (None, None, True)
    site = load_profile(
        _edit(
            "dgx-h100",
            name="tcpxo-like",
            nccl_algorithms="ring,TREE",
            nccl_protocols="^ll",
            nvls_enabled=False,
        )
    )
    assert (site.nccl_algorithms, site.nccl_protocols, site.nvls_enabled) == (
        ("Tree", "Ring"),
        ("LL128", "Simple"),
        False,
    )
    same = load_profile(
        _edit(
            "dgx-h100",
            name="tcpxo-like",
            nccl_algorithms=["Tree", "Ring"],
            nccl_protocols=["Simple", "LL128"],
            nvls_enabled=False,
        )
    )
    assert same == site and hash(same) == hash(site)
    assert load_profile(_edit("dgx-h100", nccl_algorithms=None, nccl_protocols=None)) == unset


def test_a_custom_profile_loads() -> None:
    text = _edit("dgx-h100", name="roce-h100", nic_efficiency=0.92, leaf_oversubscription=2.0)
    profile = load_profile(text)
    assert isinstance(profile, FabricProfile)
    assert (profile.name, profile.nic_efficiency, profile.leaf_oversubscription) == (
        "roce-h100",
        0.92,
        2.0,
    )


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=300)
    | st.builds(yaml.safe_dump, st.dictionaries(st.text(max_size=20), st.integers()))
)
def test_arbitrary_text_is_a_profile_or_a_profile_error(text: str) -> None:
    try:
        profile = load_profile(text)
    except ProfileError as err:
        assert "\n" not in str(err)
    else:
        assert isinstance(profile, FabricProfile)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**400), 10**400),
    st.floats(allow_nan=True),
    st.text(max_size=10),
    st.lists(st.integers(-5, 100), max_size=4),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(PRESETS)), st.data())
def test_mutated_presets_load_or_fail_with_profile_error(name: str, data: st.DataObject) -> None:
    doc = preset_doc(name)
    key = data.draw(st.sampled_from(sorted(doc)))
    doc[key] = data.draw(VALUES)
    try:
        profile = load_profile(yaml.safe_dump(doc))
    except ProfileError as err:
        assert "\n" not in str(err)
    else:
        assert isinstance(profile, FabricProfile)


def test_nvls_tree_efficiency_defaults_to_nvls_own_rate() -> None:
    """1 (NVLS-tree's NVLink stage as fast as NVLS) unless a preset was fitted on 2-node
    NVLS-tree rows; a custom profile may set it."""
    assert get_profile("dgx-h100").nvls_tree_efficiency < 1.0  # fitted (nccl-tests#309)
    assert get_profile("dgx-a100").nvls_tree_efficiency == 1.0  # no NVLS at all
    site = load_profile(_edit("dgx-h100", name="site-nvt", nvls_tree_efficiency=0.85))
    assert site.nvls_tree_efficiency == 0.85


def test_a_profile_without_the_nvls_tree_stage_fill_keeps_its_tree_stage_fill_for_both() -> None:
    """Before the two fills were apart one field set both: such a profile means the same."""
    old = load_profile(
        _edit("dgx-h100", name="old-site", stage_fill_loops=2.5, nvls_tree_stage_fill_loops=...)
    )
    assert old.nvls_tree_stage_fill_loops == 2.5 == old.stage_fill_loops
    both = load_profile(
        _edit("dgx-h100", name="new-site", stage_fill_loops=2.5, nvls_tree_stage_fill_loops=0.5)
    )
    assert (both.stage_fill_loops, both.nvls_tree_stage_fill_loops) == (2.5, 0.5)
    assert (
        get_profile("dgx-h100").nvls_tree_stage_fill_loops
        != get_profile("dgx-h100").stage_fill_loops
    )  # fitted apart: 2-node NVLS-tree rows constrain only NVLS-tree's


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_number_said_to_come_from_another_presets_fit_is_that_presets(name: str) -> None:
    """``# as ORIGIN (fitted there)``: the cloud machines on an HGX board carry its NVLink numbers;
    the comment must stay true when ORIGIN is refitted (benchmarks/cost_accuracy.py)."""
    inherited = re.finditer(
        r"^(?P<field>[a-z0-9_]+):[^#\n]*# as (?P<origin>[a-z0-9-]+) \(fitted there\)",
        preset_text(name),
        re.M,
    )
    for found in inherited:
        field, origin = found["field"], found["origin"]
        assert getattr(PRESETS[name], field) == getattr(PRESETS[origin], field), (field, origin)


def test_the_cloud_h100_presets_share_dgx_h100s_nvlink_numbers() -> None:
    fields = ("nvls_efficiency", "pipeline_fill_loops", "nvls_tree_efficiency")
    for name in ("aws-p5", "gcp-a3-mega", "azure-nd-h100-v5"):
        assert all(getattr(PRESETS[name], f) == getattr(PRESETS["dgx-h100"], f) for f in fields)


@pytest.mark.parametrize(
    ("ports", "ok"), [(1, True), (2, True), (16, True), (0, False), (17, False)]
)
def test_nic_ports_per_rail_is_a_small_positive_integer(ports: int, ok: bool) -> None:
    text = preset_text("dgx-a100").replace(
        "nic_gbit_per_s:", f"nic_ports_per_rail: {ports}\nnic_gbit_per_s:"
    )
    if ok:
        assert load_profile(text).nic_ports_per_rail == ports
    else:
        with pytest.raises(ProfileError, match="nic_ports_per_rail"):
            load_profile(text)


def test_a_tpu_profile_has_no_nic_ports() -> None:
    text = preset_text("tpu-v5e").replace(
        "nic_gbit_per_s:", "nic_ports_per_rail: 2\nnic_gbit_per_s:"
    )
    with pytest.raises(ProfileError, match="nic_ports_per_rail"):
        load_profile(text)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ('"2.26.2"', True),
        ('"2.30.7"', True),
        ("2.26", False),
        ('"2.26"', False),
        ('"v2.26.2"', False),
    ],
)
def test_nccl_version_is_a_quoted_release(value: str, ok: bool) -> None:
    text = preset_text("dgx-h100") + f"nccl_version: {value}\n"
    if ok:
        assert load_profile(text).nccl_version == value.strip('"')
    else:
        with pytest.raises(ProfileError, match="nccl_version"):
            load_profile(text)


def test_a_tpu_profile_names_no_nccl_release() -> None:
    with pytest.raises(ProfileError, match="nccl_version"):
        load_profile(preset_text("tpu-v5e") + 'nccl_version: "2.26.2"\n')


def _laughs(levels: int) -> str:
    """Anchors ``a``…: ``a`` lists ten strings, each next one ten aliases of the one before."""
    chain = ["&a [x, x, x, x, x, x, x, x, x, x]"]
    for prev, name in list(zip("abcdefghij", "bcdefghijk", strict=True))[: levels - 1]:
        chain.append(f"&{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return "[" + ", ".join(chain) + "]"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        # a billion laughs in a field: the bounded loader refuses it before anything walks it
        ({"name": "LAUGHS9"}, "YAML aliases expand the document by more than 1,000,000 values"),
        # ten million values were within reach of a message that printed the value's repr
        ({"arch": "LAUGHS7"}, "YAML aliases expand the document by more than 1,000,000 values"),
        ({"nvls": "!!bool maybe"}, r"line \d+, column 7: 'maybe' is not a valid !!bool"),
        ({"gpus_per_node": "!!float x"}, "'x' is not a valid !!float"),
        ({"arch": "2020-01-01"}, "'arch' must be one of ampere, hopper, blackwell, tpu, got a ti"),
        ({"arch": "!!binary aGVsbG8="}, "'arch' must be one of .*, got binary data$"),
        ({"arch": "!!set {a, b}"}, "'arch' must be one of .*, got a set$"),
        ({"gpus_per_node": "9" * 5000}, "a number has more than 100 digits"),
        ({"name": "[" * 3000 + "]" * 3000}, "nesting"),
        (
            {"nccl_version": "[a, b]"},
            'must be an NCCL release like "2.26.2" \\(quoted\\), got a list$',
        ),
    ],
    ids=[
        "billion-laughs",
        "ten-million",
        "bool-tag",
        "float-tag",
        "date",
        "binary",
        "set",
        "digits",
        "nesting",
        "version-list",
    ],
)
def test_hostile_profiles_are_one_short_line(changes: dict[str, str], message: str) -> None:
    """Profile text reaches fabricfit from --fabric-file, --fabric-dir and the operator's
    profile ConfigMap; it takes the bounded loader of every other input: a billion-laughs
    profile once took 40 s and 1.6 GB, a tag exit 3 (KeyError), and values printed as Python
    reprs (``datetime.date(2020, 1, 1)``, ``b'hello'``)."""
    lines = preset_text("dgx-h100").splitlines()
    for key, value in changes.items():
        written = value.replace("LAUGHS9", _laughs(9)).replace("LAUGHS7", _laughs(7))
        index = next((i for i, line in enumerate(lines) if line.startswith(f"{key}:")), None)
        if index is None:
            lines.append(f"{key}: {written}")
        else:
            lines[index] = f"{key}: {written}"
    text = "\n".join(lines) + "\n"
    with pytest.raises(ProfileError, match=message) as err:
        load_profile(text)
    assert "\n" not in str(err.value)
    assert len(str(err.value)) < 300


def test_a_profile_is_one_yaml_document() -> None:
    text = preset_text("dgx-h100")
    with pytest.raises(ProfileError, match="holds 2 YAML documents, expected one"):
        load_profile(text + "---\n" + text)
    assert load_profile("---\n" + text) == PRESETS["dgx-h100"]
