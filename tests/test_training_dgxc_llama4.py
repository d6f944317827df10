"""A check file added by dgxc54 (2026-11-28): NVIDIA/dgxc-benchmarking v25.05's Llama 4 Maverick
recipe (NeMo 2 ``pretrain_llama4_e128``: 128 experts top-1 on every second layer, a shared
expert), bf16 and fp8, 128-512 GB200 (TP 1, PP 2, VP 12, EP 64) and 512 H100 (TP 4, EP 128,
ETP 4). benchmarks/dgxc_llama4_rows.py writes benchmarks/training_dgxc_llama4.csv; the model is
the llama4-maverick preset, checked here against the Hugging Face text_config. The generic
checks and the file's error bound: tests/test_training_files.py."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

from helpers import check_fp8_faster_than_bf16, load_script, training_rows, validated
from test_hf_config_multimodal import MAVERICK_TEXT, _llama4

from trainsim.catalog import model, model_from_hf_config
from trainsim.errors import TrainsimWarning
from trainsim.validate.training import predict_training_row, row_config

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_dgxc_llama4.csv"
SCRIPT = ROOT / "benchmarks" / "dgxc_llama4_rows.py"
GEN = load_script(SCRIPT)


def test_preset_is_the_hugging_face_text_config(tmp_path):
    """The llama4-maverick preset is what trainsim reads from Maverick's config.json
    text_config (every field but the name): 24 MoE layers of 128 experts, top-1, a shared
    expert, dense layers 16384 wide, chunked attention of 8192."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_llama4(MAVERICK_TEXT)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TrainsimWarning)
        read = model_from_hf_config(path)
    preset = model("llama4-maverick")
    assert dataclasses.replace(preset, name=read.name) == read
    assert preset.num_moe_layers == 24 and preset.num_experts == 128


def test_file_is_the_tables_and_launch_sh():
    """Each row's seconds are its README column's step time; its sizes are launch.sh's branch,
    its GBS the README's layout table (the tokens/s agree: the generator asserts it)."""
    rows = {r["id"]: r for r in training_rows(FILE)}
    for gpu, dtype, _title, cols in GEN.TABLES.values():
        tp, pp, ep, etp, vp = GEN.LAYOUT[gpu]
        for gpus, t, tps in cols:
            r = rows[f"dgxc2505-llama4-maverick-{dtype}-{gpu}-{gpus}"]
            gbs = GEN.GBS[(gpu, gpus)]
            assert float(r["measured_iteration_s"]) == t
            assert r["vpp"] == (str(vp) if vp > 1 else "")
            assert abs(8192 * gbs / t / tps - 1) < 2e-3
            assert [int(r[k]) for k in ("tp", "pp", "ep", "etp", "global_batch_size")] == \
                [tp, pp, ep, etp, gbs]
            assert (gpus // (tp * pp)) % ep == 0 or (gpus // pp) % (ep * etp) == 0
            assert ("cuda_graphs" in r["options"]) == (gpu == "h100" and dtype == "fp8")
            assert r["model"] == "llama4-maverick" and r["moe_capacity_factor"] == "1.0"


def test_shared_expert_overlap_reaches_the_config():
    """NeMo's Llama4Config runs the shared expert beside the all-to-alls
    (moe_shared_expert_overlap True): the options cell says so and the config has it; the
    overlap hides part of the exchange, so the row is predicted faster than without it."""
    row = next(r for r in training_rows(FILE) if "-h100-" in r["id"])
    assert "shared_expert_overlap" in row["options"].split(";")
    assert row_config(row).parallel.moe_shared_expert_overlap is True
    plain = {**row, "options": row["options"].replace(";shared_expert_overlap", "")
             .replace("shared_expert_overlap;", "")}
    assert not row_config(plain).parallel.moe_shared_expert_overlap
    assert predict_training_row(row).predicted < predict_training_row(plain).predicted


def test_every_run_fits():
    """The runs ran: each fits its GPU (GB200 186 GB: at most 137.3 GiB, the 128-GPU bf16
    row; H100 80 GB: 47.0 GiB on 2026-11-28)."""
    _, res = validated(FILE)
    assert all(r.fits_in_memory for r in res), {r.id: r.predicted_memory_gib for r in res}


def test_gb200_rows_fast_and_fp8_faster_than_bf16():
    """2026-11-28 first prediction (nothing fitted; shared-expert overlap stated): MAPE 18.1 %,
    GB200 bf16 -16.9 / -17.4 / -18.7 %, GB200 fp8 -23.7 / -24.9 / -25.9 %, H100 bf16 -2.8 %,
    fp8 -14.8 % (without the overlap: MAPE 16.7 %). Bounds: MAPE <= 22 %, each row
    within -32 / +10 % (tests/test_training_files.py), every GB200 row fast, the fp8 rows faster
    (relative to measured) than the bf16 ones on each GPU."""
    errs = check_fp8_faster_than_bf16(FILE, "gb200")
    check_fp8_faster_than_bf16(FILE, "h100")
    assert all(e < 0 for k, e in errs.items() if "-gb200-" in k), errs
