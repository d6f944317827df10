"""Input robustness, twenty-third round (benchmarks/fuzz_inputs35.py): a training file from
another source, with the README's columns written as other tools and papers write them. One
test per class found; each fails on the previous src."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import cli

from trainsim.catalog import gpu
from trainsim.errors import ConfigError
from trainsim.validate.written import plain_number

HEADER = ("id,model,gpu,num_gpus,gpus_per_node,tp,pp,global_batch_size,seq_length,dtype,"
          "framework,framework_version,micro_batch_size,recompute,distributed_optimizer,"
          "sequence_parallel,options,measured_iteration_s")
ROW = ["r", "llama3.2-1b", "h100-sxm-80gb", "8", "8", "1", "1", "8", "1024", "bf16",
       "megatron-core", "0.9", "1", "full", "1", "0", "dp_overlap", "1.0"]
"""A row with little left to tune (a small model, its switches stated): fast to predict."""


def _rows(path: Path) -> dict:
    result = cli("validate", str(path), "--format", "json", "--compute-db", "none")
    assert result.exit_code == 0, result.output
    return {r["id"]: r for r in json.loads(result.stdout)["rows"]}


def _file(tmp_path: Path, edits: list[dict[str, str]], sep: str = ",",
          encoding: str = "utf-8", header: str = HEADER) -> Path:
    out = io.StringIO()
    w = csv.writer(out, delimiter=sep, lineterminator="\r\n")
    w.writerow(header.split(","))
    cols = header.split(",")
    for i, edit in enumerate(edits):
        cells = {**dict.fromkeys(cols, ""), **dict(zip(cols, ROW)), "id": f"r{i}", **edit}
        w.writerow([cells[c] for c in cols])
    path = tmp_path / "rows.csv"
    path.write_bytes(out.getvalue().encode(encoding))
    return path


# ------------------------------------------------------------------------------- the file

@pytest.mark.parametrize("sep,encoding", [(";", "utf-8"), ("\t", "utf-8"), ("\t", "utf-16"),
                                          (",", "utf-16"), (",", "cp1252")])
def test_a_file_as_spreadsheets_write_it_is_read(tmp_path, sep, encoding):
    """A ';' or tab file was "not a training file ... is it comma-separated?"; UTF-16 (Excel's
    Unicode text) and Windows-1252 "not UTF-8 text": the whole file refused."""
    path = _file(tmp_path, [{"gpu": "H100 SXM5 80GB", "note": "\u00b5s"}], sep, encoding,
                 header=HEADER + ",note")
    assert _rows(path)["r0"]["predicted"] > 0


def test_a_semicolon_file_reads_decimal_commas(tmp_path):
    """Excel writes ';' where the decimal mark is a comma: '1,5' seconds is 1.5 there."""
    path = _file(tmp_path, [{"measured_iteration_s": "1,5"}], ";")
    assert _rows(path)["r0"]["measured"] == 1.5


def test_a_row_whose_measurement_is_no_number_fails_alone(tmp_path):
    """A measured 'n/a' refused the whole file (every other row unpredicted)."""
    path = _file(tmp_path, [{}, {"measured_iteration_s": "n/a"}])
    rows = _rows(path)
    assert rows["r0"]["predicted"] > 0
    assert "measured_iteration_s='n/a'" in rows["r1"]["error"]


def test_a_header_with_spaces_for_underscores_is_read(tmp_path):
    """'Num GPUs' was refused as "not a training file column; did you mean 'num_gpus'?"."""
    path = _file(tmp_path, [{}], header=HEADER.replace("num_gpus", "Num GPUs")
                 .replace("global_batch_size", "global-batch-size"))
    assert _rows(path)["r0"]["predicted"] > 0


# ------------------------------------------------------------------------------ the cells

@pytest.mark.parametrize("column,text,plain", [
    ("global_batch_size", "1,024", "1024"), ("num_gpus", "1\u202f024", "1024"),
    ("seq_length", "8k", "8192"), ("seq_length", "4096 tokens", "4096"),
    ("seq_length", "2^13", "8192"), ("num_gpus", "4x8", "32"), ("num_gpus", "8 GPUs", "8"),
    ("measured_iteration_s", "9070 ms", "9.07"), ("measured_iteration_s", "~9.07", "9.07"),
    ("measured_peak_memory_gib", "71680 MiB", "70"),
    ("nic_gbps_per_gpu", "400 Gb/s", "400"), ("nic_gbps_per_gpu", "50 GB/s", "400"),
])
def test_numbers_written_with_groups_units_or_k_are_read(column, text, plain):
    assert plain_number(column, text) == (plain, True)


@pytest.mark.parametrize("column,text,words", [
    ("global_batch_size", "2k", "2000 or 2048"), ("vocab_size", "32k", "32000 or 32768"),
    ("measured_peak_memory_gib", "70 GB", "GiB"),
])
def test_numbers_that_could_be_two_are_refused_saying_which(column, text, words):
    with pytest.raises(ConfigError, match=words):
        plain_number(column, text)


def test_text_that_is_no_number_is_left_to_the_column_check():
    assert plain_number("tp", "two") == ("two", False)  # (TP2 is read: test_written_labels)
    assert plain_number("tp", "PP2") == ("PP2", False)  # another column's label
    assert plain_number("num_gpus", "8") == ("8", False)


@pytest.mark.parametrize("edit,read", [
    ({"dtype": "bf16-mixed"}, {"dtype": "bf16-mixed -> bf16"}),
    ({"dtype": "fp8 (current scaling)", "gpu": "h100-sxm-80gb"},
     {"dtype": "fp8 (current scaling) -> fp8, fp8_recipe current"}),
    ({"dtype": "16-mixed"}, {"dtype": "16-mixed -> fp16"}),
    ({"global_batch_size": "1,024"}, {"global_batch_size": "1,024 -> 1024"}),
    ({"seq_length": "1k"}, {"seq_length": "1k -> 1024"}),
    ({"measured_iteration_s": "1000 ms"}, {"measured_iteration_s": "1000 ms -> 1"}),
    ({"gpu": "DGX H100"}, {"gpu": "DGX H100 -> h100-sxm-80gb"}),
    ({"framework": "NVIDIA NeMo", "framework_version": "24.12"},
     {"framework": "NVIDIA NeMo -> nemo"}),
    ({"framework": "Picotron", "framework_version": "2024"},
     {"framework": "Picotron -> megatron-core (no profile of picotron here; it states no "
                   "ZeRO-2/3 sharding: Megatron-core's mechanisms (DDP or distributed "
                   "optimizer, TP/SP/PP), at its entry of 2024, the row's version read as "
                   "the run's date)"}),
])
def test_cells_other_sources_write_are_predicted_saying_how_they_were_read(tmp_path, edit,
                                                                           read):
    row = _rows(_file(tmp_path, [edit]))["r0"]
    assert row["predicted"] > 0, row["error"]
    assert {k: row["read_as"][k] for k in read} == read


def test_a_major_line_version_reads_as_its_first_release(tmp_path):
    """NeMo '2.x' was refused: "give a date (YYYY-MM) or a nemo release"."""
    row = _rows(_file(tmp_path, [{"framework": "NeMo", "framework_version": "2.x"}]))["r0"]
    assert row["predicted"] > 0 and row["read_as"]["framework_version"].startswith("2.x -> 2")


@pytest.mark.parametrize("edit,words", [
    ({"gpu": "TPU v5p"}, "is a Google TPU, not a GPU"),
    ({"recompute": "yes"}, "does not say which"),
    ({"activation": "silu"}, "whether the MLP is gated"),
    ({"dtype": "fp8 (delayed)", "fp8_recipe": "current"}, "fp8_recipe says 'current'"),
    ({"framework": "megatorn-lm"}, "did you mean 'megatron-lm'"),
    ({"dp": "4"}, "contradicts"),
])
def test_cells_that_say_two_things_or_nothing_known_fail_their_row_saying_why(tmp_path, edit,
                                                                              words):
    extra = ",dp,fp8_recipe,activation"
    path = _file(tmp_path, [edit, {}], header=HEADER + extra)
    rows = _rows(path)
    assert words in rows["r0"]["error"] and "\n" not in rows["r0"]["error"]
    assert rows["r1"]["predicted"] > 0


def test_a_stated_dp_keeps_the_layouts_that_have_it(tmp_path):
    """A dp column was not read: an empty tp was tuned to any layout."""
    row = _rows(_file(tmp_path, [{"tp": "", "dp": "2"}], header=HEADER + ",dp"))["r0"]
    assert row["predicted"] > 0 and row["chosen"]["tp"] * 2 == 8, row["error"]


# ------------------------------------------------------------------------ catalog names

@pytest.mark.parametrize("name,entry", [
    ("DGX H100", "h100-sxm-80gb"), ("HGX B200", "b200-sxm-180gb"), ("H100 80G", "h100-sxm-80gb"),
    ("B200 192GB", "b200-sxm-180gb"), ("MI300X 192GB", "mi300x"), ("SXM5 H100", "h100-sxm-80gb"),
])
def test_gpu_names_as_papers_and_vendors_write_them(name, entry):
    """Each was "unknown GPU" or "ambiguous" before."""
    assert gpu(name).name == entry


@pytest.mark.parametrize("name", ["H100 120GB", "A100 120GB"])
def test_a_size_no_entry_has_is_not_matched_to_a_near_one(name):
    with pytest.raises(ConfigError, match="unknown GPU|ambiguous"):
        gpu(name)


@pytest.mark.parametrize("name", ["TPU v5p", "Gaudi 3", "Trainium2"])
def test_accelerators_that_are_not_gpus_are_refused_saying_so(name):
    with pytest.raises(ConfigError, match="not a GPU: trainsim models NVIDIA and AMD GPUs"):
        gpu(name)


@pytest.mark.parametrize("name,preset", [("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3"),
                                         ("GPT-3 (175B)", "gpt3-175b")])
def test_model_names_with_a_release_date_or_a_parenthesised_size(name, preset):
    from trainsim.catalog import model
    assert model(name).name == model(preset).name


# ----------------------------------------------------------------------------- the fuzzer

@pytest.mark.slow
def test_fuzz_inputs35_long_variant_finds_no_failure():
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    run = subprocess.run([sys.executable, str(root / "benchmarks" / "fuzz_inputs35.py"),
                          "--pairs", "400"], check=False, capture_output=True, text=True,
                         env=env,
                         timeout=3000)
    assert run.returncode == 0, run.stdout[-2000:]


def test_the_table_prints_how_cells_were_read():
    """The readings were in the JSON only: the table's note said nothing of '9070 ms'."""
    from rich.console import Console

    from trainsim.report.table import render_validation
    from trainsim.validate.common import RowResult

    row = RowResult(id="r", measured=9.07, predicted=9.0,
                    extra={"read_as": {"measured_iteration_s": "9070 ms -> 9.07"}})
    console = Console(width=300, record=True)
    console.print(render_validation("training", [row], "s/iteration"))
    assert "read measured_iteration_s: 9070 ms -> 9.07" in console.export_text()


def test_an_unknown_framework_name_with_control_characters_is_not_read_as_none(tmp_path):
    """(fuzz_sweep6 found it on this round's first cut) The name went into the row's
    ``read_as`` and the table printed its ESC raw; such a name is refused as before."""
    row = _rows(_file(tmp_path, [{"framework": "\x1b[31mRED"}]))["r0"]
    assert row["predicted"] is None and "\x1b" not in row["error"]
