"""Custom profile files: parsed with file, field and reason; names never shadow presets."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from fabricfit.fabric.profiles import PRESETS, ProfileError, get_profile
from fabricfit.fabric.profiles.catalog import (
    CatalogError,
    build_catalog,
    dump_profile,
    file_stem,
    is_profile_file,
    parse_profile_file,
)


def custom(name: str = "my-h100", **changes: object) -> str:
    doc = yaml.safe_load(dump_profile(get_profile("dgx-h100")))
    doc.update(name=name, **changes)
    return yaml.safe_dump(doc)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_dumps_and_loads_back_equal(name: str) -> None:
    profile = get_profile(name)
    assert parse_profile_file(dump_profile(profile, header="from a test"), "x.yaml") == profile


def test_a_bad_file_names_the_file_the_field_and_the_reason() -> None:
    with pytest.raises(CatalogError) as err:
        parse_profile_file(custom(nic_efficiency=3.0), "/etc/fabrics/mine.yaml")
    message = str(err.value)
    assert message.startswith("profile file /etc/fabrics/mine.yaml: ")
    assert "'nic_efficiency' must be within" in message
    assert "\n" not in message


def test_custom_profiles_join_the_presets() -> None:
    catalog = build_catalog([("a.yaml", custom("site-a")), ("b.yaml", custom("site-b"))])
    assert {"site-a", "site-b", *PRESETS} == set(catalog.profiles)
    assert catalog.get("site-a").name == "site-a"
    assert catalog.origins["site-b"] == "b.yaml"
    with pytest.raises(ProfileError, match="custom: site-a, site-b"):
        catalog.get("unlike-any-name")
    with pytest.raises(ProfileError, match=r"'site-aa' \(did you mean site-a\?\)$"):
        catalog.get("site-aa")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([("a.yaml", custom("dgx-h100"))], "is a preset's name"),
        ([("a.yaml", custom("x")), ("b.yaml", custom("x"))], "also the name of a.yaml"),
    ],
)
def test_names_are_unique_and_never_a_preset(files: list[tuple[str, str]], message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        build_catalog(files)


def test_the_operator_keeps_going_and_remembers_refused_files() -> None:
    catalog = build_catalog(
        [("/d/good.yaml", custom("good")), ("/d/bad.yaml", custom("bad", nvls="maybe"))],
        strict=False,
    )
    assert "good" in catalog
    with pytest.raises(CatalogError, match=r"/d/bad.yaml: profile field 'nvls'"):
        catalog.get("bad")


def test_profile_file_names() -> None:
    assert file_stem("/etc/fabricfit/fabrics/my-h100.yaml") == "my-h100"
    assert is_profile_file("a.yml") and is_profile_file("a.yaml")
    assert not is_profile_file("..data") and not is_profile_file("notes.txt")


def test_defaults_are_written_out() -> None:
    base = get_profile("dgx-h100")
    changed = dataclasses.replace(base, name="other", alltoall_decay=0.25)
    doc = yaml.safe_load(dump_profile(changed))
    assert doc["alltoall_decay"] == 0.25 and doc["name"] == "other"
