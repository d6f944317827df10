"""Eighteenth robustness round (30th session, fuzz30): inputs read silently as something else.
Each case failed on main c919d73 before its fix; the sanity cases beside them pass there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import hf_config_read

from trainsim.catalog.hf_config import model_from_hf_config
from trainsim.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "examples" / "hf"


def _load(tmp_path: Path, base: str, **changes) -> tuple:
    cfg = json.loads((HF / base / "config.json").read_text())
    cfg.update(changes)
    return hf_config_read(tmp_path, cfg)


# ------------------------------------------------------------ a latent rank in a Llama file

def test_a_kv_lora_rank_in_a_family_without_mla_is_ignored_with_a_warning(tmp_path):
    """Before: a Llama config.json with ``kv_lora_rank: 512`` was priced as multi-latent
    attention (LlamaAttention builds q/k/v projections whatever the file says)."""
    plain, _ = _load(tmp_path, "llama3-8b")
    model, said = _load(tmp_path, "llama3-8b", kv_lora_rank=512, q_lora_rank=1536)
    assert model.kv_lora_rank is None and model.q_lora_rank is None
    assert model == plain
    assert any("kv_lora_rank is no llama field" in s for s in said), said


def test_a_kv_lora_rank_still_reads_in_deepseek_and_unknown_families(tmp_path):
    model, said = _load(tmp_path, "deepseek-v3")
    assert model.kv_lora_rank == 512 and not any("kv_lora_rank" in s for s in said)
    model, said = _load(tmp_path, "llama3-8b", kv_lora_rank=512, model_type="my_remote_mla")
    assert model.kv_lora_rank == 512


# -------------------------------------------------- layer_types of another length than layers

def test_layer_types_shorter_than_the_layers_is_refused(tmp_path):
    """Before: gpt-oss-120b's 36 layers with a 20-entry ``layer_types`` read as period 2,
    silently (transformers refuses the file: validate_layer_type)."""
    types = ["sliding_attention", "full_attention"] * 10
    with pytest.raises(ConfigError, match=r"layer_types lists 20 layers but "
                                          r"num_hidden_layers=36"):
        _load(tmp_path, "gpt-oss-120b", layer_types=types)


def test_layer_types_of_every_layer_or_padded_by_mtp_layers_read(tmp_path):
    model, _ = _load(tmp_path, "gpt-oss-120b")
    assert model.window_attn_skip_freq == 2
    padded = ["sliding_attention", "full_attention"] * 18 + ["full_attention"]
    model, _ = _load(tmp_path, "gpt-oss-120b", layer_types=padded, num_nextn_predict_layers=1)
    assert model.window_attn_skip_freq == 2


# ------------------------------------------- a recompute_modules cell without a recompute cell

def _validate_row(tmp_path: Path, **cells) -> dict:
    import csv
    import io

    from helpers import cli
    path = ROOT / "src/trainsim/data/validation/training_public.csv"
    with open(path, newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.DictReader(fh))
    row = next(r for r in rows if r["id"] == cells.pop("row", "bridge2604p1-gpt-oss-120b-b200-64"))
    assert not row["recompute"] and not row["recompute_modules"]
    row.update(cells)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, list(row))
    writer.writeheader()
    writer.writerow(row)
    (tmp_path / "row.csv").write_text(buf.getvalue())
    result = cli("validate", str(tmp_path / "row.csv"), "--format", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    return {**out["rows"][0], "file_warnings": out["warnings"]}


def test_a_bad_recompute_modules_cell_fails_its_row_naming_it(tmp_path):
    """Before: with the recompute cell empty, a recompute_modules cell '8' made every tuned
    candidate fail but 'selective:moe_act', whose set replaced the cell: the row was predicted
    (5.22 s instead of 5.14 s), the bad cell never named."""
    row = _validate_row(tmp_path, recompute_modules="8")
    assert row["predicted"] is None
    assert "recompute_modules: unknown module '8'" in row["error"]


def test_a_recompute_modules_cell_is_the_rows_selective_set(tmp_path):
    """The stated set is priced, as with recompute=selective beside it, not a tuned set."""
    alone = _validate_row(tmp_path, recompute_modules="core_attn")
    stated = _validate_row(tmp_path, recompute_modules="core_attn", recompute="selective")
    assert alone["error"] is None and alone["chosen"]["recompute"] == "selective"
    assert alone["predicted"] == stated["predicted"]


# ------------------------------------------------------- a model cell one letter from a preset

def test_a_model_cell_near_a_preset_name_warns(tmp_path):
    """Before: 'gpt-oss-120' (no preset) read the model from the shape columns alone, without
    gpt-oss-120b's other fields, and said nothing."""
    row = _validate_row(tmp_path, model="gpt-oss-120")
    assert row["error"] is None
    assert any("model 'gpt-oss-120' is no preset (did you mean 'gpt-oss-120b'?)" in w
               for w in row["file_warnings"]), row["file_warnings"]


def test_a_model_cell_of_its_own_name_or_a_preset_says_nothing(tmp_path):
    for name in ("my-moe-model", "gpt-oss-120b", "openai/gpt-oss-120b"):
        row = _validate_row(tmp_path, model=name)
        assert row["error"] is None and not any("no preset" in w for w in row["file_warnings"])


# --------------------------------------------------------- a protocol on the flow backend

def test_a_protocol_on_the_flow_backend_is_refused(tmp_path):
    """Before: `collective --backend flow --protocol LL` (or LL128, Simple) printed the
    protocol in the table's proto column with the same time as auto: the flow model has no
    protocols. A run config's cluster.nccl_proto beside network_backend flow likewise."""
    from helpers import cli, one_error_line
    result = cli("collective", "--backend", "flow", "--protocol", "LL", "--sizes", "1M:1M",
                 "--gpus", "16")
    assert "--protocol LL: the flow backend models links, not NCCL protocols" in \
        one_error_line(result)
    result = cli("simulate", str(ROOT / "examples" / "llama3-8b-h100.yaml"), "--set",
                 "cluster.network_backend=flow", "--set", "cluster.nccl_proto=LL128")
    assert "cluster.nccl_proto=LL128 is priced by the analytical network backend only" in \
        one_error_line(result)


def test_a_protocol_on_the_analytical_backend_still_prices():
    from helpers import cli
    times = {p: json.loads(cli("collective", "--protocol", p, "--sizes", "1M:1M", "--gpus", "16",
                               "--format", "json").stdout)[0]["time_us"]
             for p in ("LL", "Simple")}
    assert times["LL"] != times["Simple"]
    flow = cli("collective", "--backend", "flow", "--sizes", "1M:1M", "--gpus", "16")
    assert flow.exit_code == 0, flow.output


# ------------------------------------------------------- a small plan's energy and CO2 shown

def test_a_small_plans_energy_and_co2_are_not_shown_as_zero():
    """Before: a 1e9-token plan of a 1B model printed "energy 0 MWh" and "CO2 0 t CO2e"
    (6 kWh and 2.5 kg rounded to whole MWh and tonnes)."""
    import re

    from helpers import cli
    result = cli("plan", "llama3.2-1b", "--days", "30", "--max-gpus", "8", "--workers", "1",
                 "--recompute", "none", "--max-micro-batch", "1", "--tp", "1", "--pp", "1",
                 "--cp", "1", "--tokens", "1e9", "--seq", "2048")
    assert result.exit_code == 0, result.output
    energy = re.search(r"energy\s*│\s*([0-9.,e-]+) MWh", result.stdout)
    co2 = re.search(r"CO2\s*│\s*([0-9.,e-]+) t CO2e", result.stdout)
    assert energy and co2, result.stdout
    assert 0 < float(energy.group(1)) < 1 and 0 < float(co2.group(1)) < 1


def test_amounts_keep_whole_numbers_where_they_are_large():
    from trainsim.search.cli import _amount
    assert _amount(123456.7) == "123,457" and _amount(0.0386) == "0.0386"
    assert _amount(287.66, 1) == "287.7" and _amount(0.163, 1) == "0.163" and _amount(0) == "0"


# ------------------------------------------------ a window the family's attention does not read

def test_gpt_oss_without_layer_types_alternates_as_its_config_class():
    """Before: a gpt-oss config.json without ``layer_types`` windowed all 36 layers;
    GptOssConfig makes every second layer full (``(i + 1) % 2``)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        listed, _ = _load(Path(tmp), "gpt-oss-120b")
        cfg = json.loads((HF / "gpt-oss-120b" / "config.json").read_text())
        del cfg["layer_types"]
        (Path(tmp) / "config.json").write_text(json.dumps(cfg))
        unlisted = model_from_hf_config(Path(tmp) / "config.json")
    assert unlisted.window_attn_skip_freq == listed.window_attn_skip_freq == 2
    assert unlisted == listed


def test_a_sliding_window_in_a_family_that_reads_none_is_ignored_with_a_warning(tmp_path):
    """Before: a Llama config.json with ``sliding_window: 4096`` was priced as windowed
    attention (modeling_llama.py names no window)."""
    plain, _ = _load(tmp_path, "llama3-8b")
    model, said = _load(tmp_path, "llama3-8b", sliding_window=4096)
    assert model.sliding_window is None and model == plain
    assert any("sliding_window is no window of llama's attention" in s for s in said), said
    mixtral, said = _load(tmp_path, "mixtral-8x7b", sliding_window=4096)
    assert mixtral.sliding_window == 4096 and not any("sliding_window" in s for s in said)
