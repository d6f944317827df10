"""A check file added by data54 (2026-11-28): NVIDIA/dgxc-benchmarking's Paxml (JAX) GPT-3 175B
(fp8, 128-2,048 H100) and 5B (fp8 and bf16, 16-128 H100) recipes, release v24.11.1. Paxml has a
profile since the 55th session (paxml.yaml; the no-profile fallback before it).
benchmarks/dgxc_paxml_rows.py writes benchmarks/training_dgxc_paxml.csv (its generic checks and
the error bound: tests/test_training_files.py)."""

from __future__ import annotations

from pathlib import Path

from helpers import load_script, training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_dgxc_paxml.csv"
SCRIPT = ROOT / "benchmarks" / "dgxc_paxml_rows.py"
GEN = load_script(SCRIPT)


def test_file_is_the_tables_and_configure_sh():
    """Each row's seconds are its README column's step time; GBS = MBS x GPUs (PERCORE_BATCH_SIZE
    4 for 5B, 2 for 175B); weights sharded over 8 GPUs (5B) or 128 (175B), the rest replicas."""
    rows = {r["id"]: r for r in training_rows(FILE)}
    for size, (_rd, preset, vocab, mbs, _fn, _pol, (rc, policy, _w), tables) in GEN.MODELS.items():
        for dtype, (_line, _title, first, steps) in tables.items():
            for i, t in enumerate(steps):
                gpus = first * 2 ** i
                r = rows[GEN.row_id(size, dtype, gpus)]
                assert float(r["measured_iteration_s"]) == t
                assert (r["model"], int(r["vocab_size"]), int(r["seq_length"])) == (preset, vocab, 2048)
                assert int(r["global_batch_size"]) == mbs * gpus and int(r["micro_batch_size"]) == mbs
                fsdp = 8 if size == "5b" else 128
                assert r["zero_stage"] == "3" and int(r["dp_replicate"]) * fsdp == gpus
                assert (r["recompute"], r["recompute_modules"], r["remat_policy"]) == (rc, "", policy)
                assert (r["framework"], r["attention"]) == ("paxml", "cudnn")
    assert GEN.layout("5b", 16) == (8, 2) and GEN.layout("175b", 2048) == (128, 16)
