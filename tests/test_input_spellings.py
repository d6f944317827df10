"""Spellings a user copies from elsewhere: torch's dtype names in a run config (Hugging Face's
``torch_dtype: bfloat16``), NCCL_PROTO's protocol names in any case, and a collective table that
starts below one element."""

from __future__ import annotations

import csv
import json

import pytest
from helpers import BASE, cli, one_error_line, published_kernel_rows

from trainsim.config import TrainingConfig
from trainsim.config._build import build
from trainsim.errors import ConfigError


@pytest.mark.parametrize("written, read", [("bfloat16", "bf16"), ("torch.bfloat16", "bf16"),
                                           ("float16", "fp16"), ("half", "fp16"),
                                           ("FP16", "fp16"), ("float8_e4m3fn", "fp8")])
def test_training_dtype_reads_torch_names(written, read):
    assert build(TrainingConfig, {"dtype": written}, "training").dtype == read


def test_a_torch_name_the_field_does_not_take_is_still_refused():
    # fp32 is a dtype, but not one training.dtype takes: the synonym table must not let it in
    with pytest.raises(ConfigError, match="training.dtype='fp32' is not one of"):
        build(TrainingConfig, {"dtype": "float32"}, "training")


def test_the_synonym_applies_only_to_dtype_fields():
    # 'half' is no attention kernel: a non-dtype literal is not rewritten by the dtype table
    with pytest.raises(ConfigError, match="training.attention='half'"):
        build(TrainingConfig, {"attention": "half"}, "training")


def test_simulate_with_a_torch_dtype_equals_the_short_name(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(BASE)
    runs = [json.loads(cli("simulate", str(cfg), "--set", f"training.dtype={d}",
                           "--format", "json").output) for d in ("bf16", "bfloat16")]
    assert runs[0]["iteration_time_s"] == runs[1]["iteration_time_s"]
    assert runs[1]["config"]["training"]["dtype"] == "bf16"


def _rows(*args: str) -> list[dict]:
    out = cli("collective", "--sizes", "1M:1M", "--format", "json", *args)
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.mark.parametrize("written", ["ll128", "LL128", " Ll128 "])
def test_protocol_is_read_without_regard_to_case(written):
    # NCCL's parseList compares NCCL_PROTO's tokens with strcasecmp (src/graph/tuning.cc)
    rows = _rows("--protocol", written)
    assert [r["protocol"] for r in rows] == ["LL128"]
    assert rows == _rows("--protocol", "LL128")


def test_an_unknown_protocol_is_refused():
    line = one_error_line(cli("collective", "--sizes", "1M:1M", "--protocol", "LL64"))
    assert "unknown protocol 'LL64'" in line


def test_a_table_below_one_bfloat16_element_is_refused():
    line = one_error_line(cli("collective", "--sizes", "1:4"))
    assert "MIN must be at least 2 bytes" in line
    assert cli("collective", "--sizes", "2:4").exit_code == 0


def _kernel_prediction(tmp_path, causal: str) -> float:
    row = published_kernel_rows(lambda r: r["causal"] == "1"
                                and r["kind"] == "attention_fwd_bwd")[0]
    row = dict(row, causal=causal)
    path = tmp_path / f"k{len(list(tmp_path.iterdir()))}.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    out = cli("validate", str(path), "--format", "json")
    assert out.exit_code == 0, out.output
    return json.loads(out.output)["rows"][0]["predicted"]


def test_a_kernel_rows_causal_cell_reads_like_any_switch(tmp_path):
    # '1.0' (a 0/1 column written as floats) and 'on' read as the config's switches read them
    one = _kernel_prediction(tmp_path, "1")
    assert _kernel_prediction(tmp_path, "1.0") == one
    assert _kernel_prediction(tmp_path, "on") == one
    assert _kernel_prediction(tmp_path, "0") != one
