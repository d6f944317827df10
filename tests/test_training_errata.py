"""The errata of the published training file (benchmarks/training_errata.csv) and the MLPerf
profile's fp8 parameter setting they sit beside."""

from __future__ import annotations

import csv
from pathlib import Path

from trainsim.catalog.frameworks import framework_profile
from trainsim.validate import BUNDLED_DIR
from trainsim.validate.errata import FIELDS, read_errata

ERRATA = Path(__file__).resolve().parents[1] / "benchmarks" / "training_errata.csv"


def _errata() -> list[dict[str, str]]:
    return list(read_errata(ERRATA).values())


def test_errata_lines_end_in_crlf():
    raw = ERRATA.read_bytes()
    assert raw.endswith(b"\r\n")
    assert raw.count(b"\n") == raw.count(b"\r\n")


def test_each_cell_is_corrected_once():
    keys = [(e["id"], e["field"]) for e in _errata()]
    assert len(keys) == len(set(keys))


def test_every_erratum_names_a_cell_that_still_says_what_it_quotes():
    with open(BUNDLED_DIR / "training_public.csv", newline="") as fh:
        rows = {r["id"]: r for r in csv.DictReader(fh)}
    for e in _errata():
        assert e["id"] in rows, e["id"]
        assert e["field"] in rows[e["id"]], (e["id"], e["field"])
        assert rows[e["id"]][e["field"]] == e["file_value"], (e["id"], e["field"])
        assert e["corrected_value"] != e["file_value"] and e["evidence"].strip()


def test_mlperf_gathers_fp8_parameters_from_round_4():
    """FP8_PARAMS=True in config_common.sh of the v4.0 and v4.1 GPT-3 submissions; v3.1's
    NeMo had no such option."""
    assert framework_profile("mlperf-nemo", "3.1").defaults["fp8_param_gather"] is False
    assert framework_profile("mlperf-nemo", "4.0").defaults["fp8_param_gather"] is True
    assert framework_profile("mlperf-nemo", "4.1").defaults["fp8_param_gather"] is True


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_errata_are_applied_and_an_empty_value_withdraws_the_reading(tmp_path):
    """A corrected cell is written; an empty corrected memory leaves the row's time, an empty
    corrected time takes the row out; a stale erratum or one cell corrected twice is refused."""
    import pytest

    from trainsim.errors import ConfigError
    from trainsim.validate.errata import corrected_file

    rows = [{"id": "a", "measured_iteration_s": "1.0", "measured_peak_memory_gib": "10",
             "tp": "1"},
            {"id": "b", "measured_iteration_s": "2.0", "measured_peak_memory_gib": "", "tp": "2"}]
    data = _write(tmp_path / "runs.csv", rows)

    def errata(*fixes):
        return _write(tmp_path / "errata.csv", [
            dict(zip(FIELDS, (*f, "evidence"), strict=True)) for f in fixes])

    (tmp_path / "out").mkdir()
    out, gone = corrected_file(data, errata(("a", "measured_peak_memory_gib", "10", ""),
                                            ("b", "tp", "2", "4")), tmp_path / "out")
    with open(out, newline="") as fh:
        got = {r["id"]: r for r in csv.DictReader(fh)}
    assert gone == [("a", "measured_peak_memory_gib")]
    assert got["a"]["measured_peak_memory_gib"] == "" and got["a"]["measured_iteration_s"] == "1.0"
    assert got["b"]["tp"] == "4"
    out, gone = corrected_file(data, errata(("b", "measured_iteration_s", "2.0", "")),
                               tmp_path / "out")
    with open(out, newline="") as fh:
        assert [r["id"] for r in csv.DictReader(fh)] == ["a"]
    with pytest.raises(ConfigError, match="now says"):
        corrected_file(data, errata(("b", "tp", "8", "4")), tmp_path / "out")
    with pytest.raises(ConfigError, match="second erratum"):
        corrected_file(data, errata(("b", "tp", "2", "4"), ("b", "tp", "2", "8")),
                       tmp_path / "out")
    with pytest.raises(ConfigError, match="not in the file"):
        corrected_file(data, errata(("c", "tp", "2", "4")), tmp_path / "out")
