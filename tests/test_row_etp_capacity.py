"""How a training row's empty expert-TP cell and its capacity cell are read (etp57).

An empty ``etp`` is 1 unless the row's framework leaves expert TP to Megatron-core, whose unset
expert TP is the TP (profile feature ``moe_etp_unset_is_tp``: NeMo from 24.09); a
``moe_capacity_factor`` number is token dropping with padded, static shapes (validation README,
format v2), i.e. Megatron-core's ``moe_pad_expert_input_to_capacity`` set too.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from trainsim.catalog import run_config_from_dict
from trainsim.validate import predict_training_row
from trainsim.validate.row_settings import counts_checked, training_base, with_choice

ROOT = Path(__file__).resolve().parents[1]


def _rows(name: str) -> dict[str, dict[str, str]]:
    with open(ROOT / "benchmarks" / f"training_{name}.csv", newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f)}


GB200_8X22B = _rows("nemo_perf")["nemo2504-mixtral-8x22b-gb200-256"]


def _config(row: dict[str, str]):
    raw, unknown = training_base(counts_checked(row))
    return raw, run_config_from_dict(with_choice(raw, {k: v[0] for k, v in unknown.items()}))


def test_the_nemo_row_without_an_etp_cell_runs_expert_tp_equal_to_tp():
    assert GB200_8X22B["etp"] == "" and GB200_8X22B["tp"] == "2"
    _, cfg = _config(GB200_8X22B)
    assert cfg.parallel.etp == 2
    _, stated = _config({**GB200_8X22B, "etp": "1"})
    assert stated.parallel.etp == 1


@pytest.mark.parametrize("cells", [
    {"framework_version": "24.07"},  # before the profile entry that reads the default
    {"framework": "megatron-core", "framework_version": "2025-05"},  # no such profile feature
    {"framework": "", "framework_version": ""},  # no framework: the column's plain default
])
def test_elsewhere_an_empty_etp_stays_one(cells):
    raw, cfg = _config({**GB200_8X22B, **cells})
    assert "expert_tensor_parallel_size" not in raw["parallel"]
    assert cfg.parallel.etp == 1


def test_a_dense_row_gets_no_expert_tp():
    row = _rows("nemo_perf")["nemo2504-mixtral-8x22b-gb200-256"]
    dense = {**row, "model": "llama3-70b", "num_experts": "", "moe_top_k": "", "ep": "1",
             "moe_ffn_hidden_size": "", "hidden_size": "", "num_layers": "",
             "num_attention_heads": "", "num_kv_heads": "", "ffn_hidden_size": "",
             "vocab_size": "", "activation": ""}
    raw, _ = training_base(counts_checked(dense))
    assert "expert_tensor_parallel_size" not in raw["parallel"]


def test_expert_tp_two_adds_its_collectives_to_the_step():
    """The same row with etp 2 (the default) and with etp 1 stated: the expert-TP all-gather and
    reduce-scatter around the experts make the step slower."""
    default = predict_training_row(GB200_8X22B)
    one = predict_training_row({**GB200_8X22B, "etp": "1"})
    assert default.error is None and one.error is None
    assert default.predicted > one.predicted


def test_the_capacity_cell_pads_to_the_capacity():
    row = _rows("dgxc_grok1_2505")
    row = next(iter(row.values()))
    assert row["moe_capacity_factor"] == "1.0"
    raw, cfg = _config(row)
    assert raw["model"]["moe_pad_expert_input_to_capacity"] is True
    assert cfg.model.moe_padded_to_capacity
    raw, cfg = _config({**row, "moe_capacity_factor": ""})
    assert "moe_pad_expert_input_to_capacity" not in raw["model"]
    assert not cfg.model.moe_padded_to_capacity


@pytest.mark.parametrize("name, prefix", [("moe_modelzoo", "mzoo"),
                                          ("dgxc2505", "dgxc2505-deepseek"),
                                          ("nemo_perf", "nemo2502-mixtral-8x22b")])
def test_the_generators_state_the_expert_tp_their_sources_set(name, prefix):
    rows = [r for r in _rows(name).values() if r["id"].startswith(prefix)]
    assert rows and all(r["etp"] == "1" for r in rows)
