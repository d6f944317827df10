"""A check file added by dgxc54 (2026-11-28): NVIDIA/dgxc-benchmarking's Grok-1 314B recipe in its
NeMo 2 form (``pretrain_grok1_314b``, nemo:25.04.00), release v25.05.02: 128-512 GB200 (TP 4, EP 8,
expert TP 4, CUDA graphs) and 512 H100 (TP 4, PP 8, CP 2, EP 8, VP 8), bf16 and fp8, all 64
layers. benchmarks/dgxc_grok1_2505_rows.py writes benchmarks/training_dgxc_grok1_2505.csv. The
GB200 rows state expert TP in the optional ``etp`` column (added for them). The generic checks
and the file's error bound: tests/test_training_files.py."""

from __future__ import annotations

from pathlib import Path

from helpers import check_fp8_faster_than_bf16, load_script, training_rows, validated

from trainsim.validate.training import predict_training_row, row_config

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_dgxc_grok1_2505.csv"
SCRIPT = ROOT / "benchmarks" / "dgxc_grok1_2505_rows.py"
GEN = load_script(SCRIPT)


def _rows() -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in training_rows(FILE)}


def test_file_is_the_tables_and_launch_sh():
    """Each row's seconds are its README column's step time; its sizes launch.sh's branch and
    the README's table (GBS = 2 x GPUs); Grok-1's shape as in the v24.11 / v25.02 file."""
    rows = _rows()
    for gpu, dtype, _title, cols in GEN.TABLES.values():
        tp, pp, cp, ep, etp, vp, graphs = GEN.LAYOUT[gpu]
        for gpus, t, _tps in cols:
            r = rows[GEN.row_id(gpu, dtype, gpus)]
            assert float(r["measured_iteration_s"]) == t
            assert r["vpp"] == (str(vp) if vp > 1 else "")
            assert [int(r[k]) for k in ("tp", "pp", "cp", "ep", "etp", "global_batch_size",
                                        "num_layers")] == [tp, pp, cp, ep, etp, 2 * gpus, 64]
            # the expert layout tiles the GPUs: EP x ETP x expert-DP x PP
            assert gpus % (ep * etp * pp) == 0
            assert ("cuda_graphs" in r["options"]) == graphs
            assert (int(r["hidden_size"]), int(r["num_experts"]), int(r["moe_top_k"])) == \
                (6144, 8, 2)
    # the 512-GB200 tokens/s cells are 8192 x 512 / step (half the GBS), kept as a slip
    assert "not 8192 x GBS 1024" in rows[GEN.row_id("gb200", "bf16", 512)]["note"]


def test_etp_column_reaches_the_config():
    """The etp cell is Megatron's expert_tensor_parallel_size: the GB200 rows run with expert TP
    4, and with expert TP 1 (each GPU holds whole 32768-wide experts) the same row needs more
    memory than the GB200 has (152.6 against 242.6 GiB at 128 bf16 GPUs on 2026-11-28). An empty
    cell is NeMo's default, the TP (profile ``moe_etp_unset_is_tp``, etp57): 4 here too."""
    row = _rows()[GEN.row_id("gb200", "bf16", 128)]
    assert row_config(row).parallel.etp == 4
    assert row_config({**row, "etp": ""}).parallel.etp == 4
    blank = {**row, "etp": "1"}
    assert row_config(blank).parallel.etp == 1
    stated, unstated = predict_training_row(row), predict_training_row(blank)
    assert stated.fits_in_memory and not unstated.fits_in_memory
    assert stated.predicted_memory_gib < unstated.predicted_memory_gib - 50


def test_every_run_fits():
    """The runs ran: each fits its GPU (GB200 at most 152.6 GiB, H100 66.4 GiB on 2026-11-28)."""
    _, res = validated(FILE)
    assert all(r.fits_in_memory for r in res), {r.id: r.predicted_memory_gib for r in res}


def test_fp8_rows_are_faster_than_bf16_relative_to_measured():
    """2026-11-28 first prediction (nothing fitted): MAPE 5.6 %, max 13.9 %; GB200 bf16 +1.8 ..
    +3.0 %, fp8 -5.2 .. -7.6 %; H100 bf16 +13.9 %, fp8 -4.7 %. Bounds: MAPE <= 10 %, each row
    within -15 / +20 % (tests/test_training_files.py), the fp8 rows faster (relative to
    measured) than the bf16 ones."""
    check_fp8_faster_than_bf16(FILE)
