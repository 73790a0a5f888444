"""The measured rows (``fabricfit_dev.dataset``): which rows of ``tests/fixtures`` become cases,
and which of a calibration log's rows are fitted."""

from __future__ import annotations

import pytest

from fabricfit_dev.dataset import Selection, load_cases, read_fixture


def test_cases_load_without_the_nccl_tests_manifest() -> None:
    doc = "rows:\n  - {id: x, fabric: dgx-h100, collective: all-reduce, size_bytes: 1024,\n" \
          "     nodes: 1, gpus_per_node: 8, busbw_gb_per_s: 1.5, source: here}\n"  # fmt: skip

    def read(path: str) -> str:
        if path == "cost/measurements.yaml":
            return doc
        raise FileNotFoundError(path)

    (case,) = load_cases(read)
    assert case.measurement.time_us == pytest.approx(1024 * 1.75 / 1.5e9 * 1e6)
    assert not case.calibration and case.measurement.source == "here"


def test_a_calibration_log_may_fit_only_its_small_rows() -> None:
    """The cloud logs: rows up to max_bytes are calibration, the larger ones stay held out."""
    cases = load_cases(read_fixture, {"aws-p5"})
    one_node = [c for c in cases if c.id.startswith("h100-1x8-aws-p5-batch")]
    assert one_node and all(c.calibration for c in one_node if c.measurement.size_bytes <= 1 << 16)
    assert any(c.measurement.size_bytes > 1 << 16 for c in one_node)
    assert not any(c.calibration for c in one_node if c.measurement.size_bytes > 1 << 16)


def test_a_calibration_log_may_fit_every_second_row() -> None:
    """A3 Mega's sweep: every second row in the log's order is calibration (the first
    included), the rows between stay held out, across every size band."""
    cases = load_cases(read_fixture, {"gcp-a3-mega"})
    sweep = [c for c in cases if c.id.startswith("h100-2x8-gcp-a3-mega")]
    assert len(sweep) > 20
    assert [c.calibration for c in sweep] == [i % 2 == 0 for i in range(len(sweep))]
    held_out = [c.measurement.size_bytes for c in sweep if not c.calibration]
    assert min(held_out) <= 1 << 16 and max(held_out) >= 1 << 30


def test_a_calibration_selection_combines_size_limit_and_stride() -> None:
    selection = Selection(max_bytes=1 << 16, every=3)
    fitted = [i for i in range(10) if selection.fits(i, 1 << (10 + 2 * i))]
    assert fitted == [0, 3]  # 1 KiB and 64 KiB; 9 is every third but 256 MiB is too large
    assert all(Selection().fits(i, 1 << 40) for i in range(5))
    with pytest.raises(ValueError, match="'every' must be at least 1, got 0"):
        Selection(every=0)


def test_a_calibration_selection_may_start_at_a_size() -> None:
    selection = Selection(min_bytes=1 << 20, every=2)
    sizes = [1 << (17 + i) for i in range(8)]  # 128 KiB ... 16 MiB, indices 0..7
    fitted = [s for i, s in enumerate(sizes) if selection.fits(i, s)]
    assert fitted == [2 << 20, 8 << 20]  # indices 4 and 6; 1 MiB (3) and 16 MiB (7) are odd


def test_the_two_node_nvls_tree_sweep_is_fitted_on_every_second_row_from_1_mib() -> None:
    """nccl-tests#309's bare-metal 2x8 sweep: rows from 1 MiB, every second of them in the
    log's order, are calibration; the smaller rows, the rows between and the other sites'
    2x8 runs stay held out."""
    cases = load_cases(read_fixture, {"dgx-h100"})
    sweep = [c for c in cases if c.id.startswith("h100-2x8-qoofyk")]
    fitted = [c.measurement.size_bytes for c in sweep if c.calibration]
    assert fitted == [1 << k for k in range(21, 34, 2)]  # 2 MiB, 8 MiB, ..., 8 GiB
    others = [c for c in cases if c.id.startswith(("h100-2x8-gjaion", "h100-2x8-oci"))]
    assert others and not any(c.calibration for c in others)


def test_a_run_that_names_its_nccl_release_is_priced_with_it() -> None:
    cases = load_cases(read_fixture, {"dgx-h100"})
    versions = {c.id.split("@")[0]: c.measurement.nccl_version for c in cases}
    assert versions["h100-4x8-qoofyk-vm-all-reduce"] == "2.26.2"
    assert versions["h100-4x8-voltagepark-all-reduce"] == "2.24.3"
    assert versions["h100-2x8-oci-roce-all-reduce"] is None  # "not stated"
