"""Review of the 35th session's input reading (review35): a measurement written with a comma that
may group digits or mark decimals is refused on its row, not read as the larger number; GPU
names that leave only the form factor unstated are the SXM part, said in the row's assumptions;
an exact memory size beats a near one; the GH200 Grace Hopper entries."""

from __future__ import annotations

import csv
import io
import json

import pytest
from helpers import cli

from trainsim import catalog
from trainsim.errors import ConfigError
from trainsim.validate.written import plain_number

HEADER = ("id,model,gpu,num_gpus,gpus_per_node,tp,pp,global_batch_size,seq_length,dtype,"
          "framework,framework_version,micro_batch_size,recompute,distributed_optimizer,"
          "sequence_parallel,options,nic_gbps_per_gpu,measured_iteration_s")
ROW = ["r", "llama3.2-1b", "h100-sxm-80gb", "8", "8", "1", "1", "8", "1024", "bf16",
       "megatron-core", "0.9", "1", "full", "1", "0", "dp_overlap", "400", "1.0"]


def _rows(tmp_path, edits, sep=","):
    out = io.StringIO()
    w = csv.writer(out, delimiter=sep, lineterminator="\n")
    cols = HEADER.split(",")
    w.writerow(cols)
    for i, edit in enumerate(edits):
        cells = {**dict(zip(cols, ROW)), "id": f"r{i}", **edit}
        w.writerow([cells[c] for c in cols])
    path = tmp_path / "rows.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    result = cli("validate", str(path), "--format", "json", "--compute-db", "none")
    assert result.exit_code == 0, result.output
    return {r["id"]: r for r in json.loads(result.stdout)["rows"]}


# --------------------------------------------------------------- a comma in a measurement

@pytest.mark.parametrize("column,text,two", [
    ("measured_iteration_s", "9,070", "9070 or 9.070"),   # was read as 9070 s
    ("measured_peak_memory_gib", "70,500", "70500 or 70.500"),
    ("nic_gbps_per_gpu", "1,024", "1024 or 1.024"),
])
def test_a_comma_that_may_mark_decimals_in_a_measurement_is_refused(column, text, two):
    with pytest.raises(ConfigError, match=two):
        plain_number(column, text)


@pytest.mark.parametrize("column,text,plain", [
    ("num_gpus", "1,024", "1024"),                       # a count has no decimals
    ("global_batch_size", "1,536", "1536"),
    ("measured_iteration_s", "1,024.5", "1024.5"),       # a decimal point: the comma groups
    ("measured_iteration_s", "12,345,678", "12345678"),  # two groups: no decimal comma
    ("measured_iteration_s", "9\u202f070", "9070"),      # a space never marks decimals
])
def test_a_comma_that_can_only_group_digits_is_still_read(column, text, plain):
    assert plain_number(column, text) == (plain, True)


def test_an_ambiguous_comma_fails_its_row_only_and_a_semicolon_file_reads_it(tmp_path):
    rows = _rows(tmp_path, [{}, {"measured_iteration_s": "1,250"}])
    assert rows["r0"]["predicted"] > 0
    assert "1250 or 1.250" in rows["r1"]["error"]
    # a ';' file's decimal comma is a decimal: 1.25 s
    assert _rows(tmp_path, [{"measured_iteration_s": "1,250"}], ";")["r0"]["measured"] == 1.25


def test_points_that_may_group_digits_in_a_semicolon_file_fail_their_row(tmp_path):
    """In a ';' file (a decimal-comma locale) '8.000' GPUs was read as 8, not 8000."""
    rows = _rows(tmp_path, [{"num_gpus": "8.000"}, {"measured_iteration_s": "1.250"},
                            {"measured_iteration_s": "1,25"}], ";")
    assert "8000 with digit groups, or 8.000" in rows["r0"]["error"]
    assert "1250 with digit groups" in rows["r1"]["error"]   # the file writes decimal commas
    assert rows["r2"]["measured"] == 1.25 and rows["r2"]["predicted"] > 0
    # a ';' file that writes its decimals with points: 1.250 s is 1.25
    assert _rows(tmp_path, [{"measured_iteration_s": "1.250"}], ";")["r0"]["measured"] == 1.25


# ------------------------------------------------------------------------------ GPU names

@pytest.mark.parametrize("name,entry", [
    ("A100 80GB", "a100-sxm-80gb"), ("A100-80GB", "a100-sxm-80gb"),
    ("A100 40GB", "a100-sxm-40gb"), ("A100 80G", "a100-sxm-80gb"),
    ("A100 PCIe 80GB", "a100-pcie-80gb"),        # a stated form factor is kept
    ("H100 94GB", "h100-nvl-94gb"),              # the entry whose name states 94 GB
    ("H100 SXM 94GB", "h100-sxm-96gb-500w"),     # its alias, the MIG guide's name
    ("H100", "h100-sxm-80gb"), ("H100 80GB", "h100-sxm-80gb"),
])
def test_a_name_that_leaves_only_the_form_factor_open_is_the_sxm_part(name, entry):
    assert catalog.gpu(name).name == entry


@pytest.mark.parametrize("name", ["a100", "A100 SXM", "V100"])
def test_a_name_that_leaves_the_memory_open_stays_ambiguous(name):
    with pytest.raises(ConfigError, match="ambiguous"):
        catalog.gpu(name)


def test_only_a_form_factor_default_is_reported_as_assumed():
    assert "SXM" in catalog.gpu_assumed("A100 80GB")
    assert catalog.gpu_assumed("A100 80GB").startswith("a100-sxm-80gb")
    for name in ("a100-sxm-80gb", "A100-SXM4-80GB", "H100", "H100 94GB", "A100 PCIe 80GB",
                 "DGX H100"):
        assert catalog.gpu_assumed(name) is None, name


def test_a_row_says_it_assumed_the_sxm_part(tmp_path):
    rows = _rows(tmp_path, [{"gpu": "A100 80GB", "model": "llama3.2-1b", "dtype": "bf16"},
                            {"gpu": "a100-sxm-80gb"}])
    assert rows["r0"]["predicted"] == rows["r1"]["predicted"] > 0
    assert "SXM" in rows["r0"]["assumed"]["gpu"]
    assert "gpu" not in (rows["r1"].get("assumed") or {})


# ------------------------------------------------------------------------------ GH200

@pytest.mark.parametrize("name,entry,hbm_tb_s,gib", [
    ("NVIDIA GH200 480GB", "gh200-96gb", 4.0, 95.0),       # nvidia-smi's name of the HBM3 part
    ("GH200 96GB", "gh200-96gb", 4.0, 95.0),
    ("NVIDIA GH200 144G HBM3e", "gh200-144gb", 4.9, 142.5),
    ("GH200 144GB", "gh200-144gb", 4.9, 142.5),
])
def test_gh200_entries_hold_the_datasheet_figures(name, entry, hbm_tb_s, gib):
    """NVIDIA GH200 datasheet: H100 SXM tensor peaks, 132 SMs, 96 GB HBM3 at 4 TB/s or 144 GB
    HBM3e at 4.9 TB/s, NVLink 4 900 GB/s and NVLink-C2C 900 GB/s bidirectional."""
    g, h100 = catalog.gpu(name), catalog.gpu("h100-sxm-80gb")
    assert g.name == entry
    assert g.peak_flops == h100.peak_flops and g.num_sms == 132
    assert g.hbm_bw_Bps == pytest.approx(hbm_tb_s * 1e12)
    assert g.hbm_bytes == pytest.approx(gib * 2**30)
    assert g.nvlink_bw_Bps == h100.nvlink_bw_Bps == pytest.approx(450e9)
    assert g.host_link_bw_Bps == pytest.approx(450e9)


def test_gh200_no_longer_suggests_gb200():
    with pytest.raises(ConfigError) as info:
        catalog.gpu("GH200")
    assert "gh200-96gb" in str(info.value) and "gb200'" not in str(info.value)
