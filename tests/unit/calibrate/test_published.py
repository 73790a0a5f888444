"""Whose rows judge a preset (families), the document ``fabricfit cost`` reads, and what it
says for one prediction: a preset's own family's rows, a plain none, the caveat at scale."""

from __future__ import annotations

import dataclasses
import json

import pytest

from fabricfit.calibrate.families import ACROSS_DOMAINS, ONE_DOMAIN, family, inherited_origins
from fabricfit.calibrate.published import (
    PublishedAccuracy,
    accuracy_document,
    parse_accuracy_document,
    report_for,
)
from fabricfit.calibrate.regimes import RegimeAccuracy, ScaleCaveat
from fabricfit.cost import Collective
from fabricfit.fabric.profiles import get_profile


def test_one_domain_rows_are_the_boards_across_domains_the_networks() -> None:
    """aws-p5 holds dgx-h100's NVLink numbers (``# as dgx-h100 (fitted there)``): one node of it
    is judged with every HGX H100 board's rows, 32 nodes of it only with its own EFA rows."""
    board = family("aws-p5", ONE_DOMAIN)
    assert {"aws-p5", "dgx-h100", "dgx-h200", "gcp-a3-mega", "azure-nd-h100-v5"} <= set(board)
    assert family("aws-p5", ACROSS_DOMAINS) == ("aws-p5",)
    assert family("dgx-h100", ACROSS_DOMAINS) == (
        "dgx-h100", "dgx-h200", "h100-leaf-spine-2to1", "h100-rail-only",
    )  # fmt: skip
    assert family("dgx-a100", ONE_DOMAIN) == ("dgx-a100", "oci-bm-gpu4-8")
    assert family("dgx-a100", ACROSS_DOMAINS) == ("dgx-a100",)
    assert family("gb200-nvl72", ONE_DOMAIN) == ("gb200-nvl72",)
    assert family("tpu-v5e", ONE_DOMAIN) == ("tpu-v5e",)


def test_inherited_numbers_are_read_from_the_preset_comments() -> None:
    texts = {"x": "nvlink_efficiency: 0.7   # as y (fitted there)\nnic_efficiency: 0.9  # own\n"}
    assert inherited_origins(texts) == {"x": {"y"}}
    assert family("x", ONE_DOMAIN, texts) == ("x", "y") and family("x", ACROSS_DOMAINS, texts) == (
        "x",
    )


def _regime(scope: str, rows: int) -> RegimeAccuracy:
    return RegimeAccuracy(
        "16-256MiB", scope, "all-reduce", rows, 1, 0.05, 0.2, 0.06, 0.2, 0.01, 0.01
    )


def _table() -> PublishedAccuracy:
    h100 = "dgx-h100,dgx-h200"
    doc = accuracy_document(
        [_regime(">=8 domains", 40)],
        40,
        families={h100: [_regime(">=8 domains", 12), _regime("1 domain", 5)], "aws-p5": []},
        fabrics={
            "dgx-h100": {ONE_DOMAIN: h100, ACROSS_DOMAINS: h100},
            "aws-p5": {ONE_DOMAIN: "aws-p5," + h100, ACROSS_DOMAINS: "aws-p5"},
        },
        at_scale=ScaleCaveat(54, 4, 16, 0.97, 0.67, 1.41),
    )
    return parse_accuracy_document(json.loads(json.dumps(doc)))


def test_a_preset_is_judged_on_its_familys_rows_only() -> None:
    table = _table()
    h100 = report_for(table, Collective.ALL_REDUCE, 64 << 20, 10, get_profile("dgx-h100"))
    assert h100.regime is not None and h100.regime.rows == 12  # not the 40 of every preset
    assert "over 12 published rows of dgx-h100's hardware (dgx-h100, dgx-h200)" in h100.describe()
    p5 = report_for(table, Collective.ALL_REDUCE, 64 << 20, 32, get_profile("aws-p5"))
    assert p5.regime is None
    assert p5.describe().startswith(
        "no published rows of aws-p5's hardware in this regime (16-256MiB, >=8 domains, all-reduce)"
    )
    record = p5.record()
    assert record is not None and record["rows"] == 0 and record["median"] is None
    assert record["fabrics"] == ["aws-p5"] and record["note"].startswith("no published rows of")
    assert record["at_scale"]["worst_ratio"] == 1.41


def test_the_caveat_comes_only_at_scale_and_a_custom_profile_has_no_rows() -> None:
    table = _table()
    h100 = get_profile("dgx-h100")
    inside = report_for(table, Collective.ALL_REDUCE, 64 << 20, 1, h100)
    assert inside.caveat is None and inside.regime is not None and inside.regime.rows == 5
    small = report_for(table, Collective.ALL_REDUCE, 1 << 20, 16, h100)
    assert small.caveat is None and small.record() is None  # nothing known: null, as before
    mine = dataclasses.replace(h100, name="mine")
    custom = report_for(table, Collective.ALL_REDUCE, 64 << 20, 16, mine)
    assert custom.regime is None and not custom.preset
    assert custom.describe().startswith(
        "no published rows of mine's numbers in this regime (16-256MiB, >=8 domains, all-reduce):"
        " it is not a preset"
    )
    assert "model can be optimistic" in custom.describe()  # the caveat is the model's, not a row's


def test_a_document_of_another_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="fabricfit-measured-accuracy"):
        parse_accuracy_document({"kind": "something-else", "regimes": []})
    with pytest.raises(ValueError):
        parse_accuracy_document([1, 2])
    empty = parse_accuracy_document({"kind": "fabricfit-measured-accuracy"})
    assert empty.at_scale is None and not empty.families
