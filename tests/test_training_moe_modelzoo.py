"""A held-out source added by newsrc8 (2026-11-26): Qwen3-235B-A22B pre-training speeds from the
Megatron-core MoE team's yanring/Megatron-MoE-ModelZoo best_practice/qwen3/readme.md (H100 step
times, H100 long context, GB200 and GB300). benchmarks/moe_modelzoo_rows.py writes
benchmarks/training_moe_modelzoo.csv. The rows re-derived from the readme's figures, Megatron's
FLOP count checked on the rows that publish both a time and a rate (the generic checks and the
bound on the first-prediction error: tests/test_training_files.py)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from helpers import load_script, training_rows

from trainsim.validate.training import row_config
from trainsim.workload import megatron_fsdp

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_moe_modelzoo.csv"
SCRIPT = ROOT / "benchmarks" / "moe_modelzoo_rows.py"
GEN = load_script(SCRIPT)


def test_file_is_the_readme_tables():
    rows = training_rows(FILE)
    steps = {r[0]: r[15] for r in GEN.H100_TABLE}
    for r in rows:
        assert r["source"].startswith("yanring/Megatron-MoE-ModelZoo best_practice/qwen3/readme.md @ ")
        assert r["model"] == "qwen3-235b-a22b" and r["framework"] == "megatron-core"
        line = int(r["source"].rsplit("line ", 1)[1])
        t, gpus, gbs = float(r["measured_iteration_s"]), int(r["num_gpus"]), int(r["global_batch_size"])
        if "published step time" in r["note"]:
            assert t == steps[line]
        else:  # a published rate: the iteration is Megatron's count over rate x GPUs
            tf = float(r["note"].split("published ", 1)[1].split(" TFLOPS")[0])
            flops = GEN.megatron_flops_per_sequence(int(r["seq_length"])) * gbs
            assert flops / (t * gpus * 1e12) == pytest.approx(tf, rel=1e-4), r["id"]
        dp = gpus // (int(r["tp"]) * int(r["pp"]) * int(r["cp"]))
        assert gbs % (dp * int(r["micro_batch_size"])) == 0, r["id"]
        layers = r["pipeline_layout"]
        if layers:  # the embedding and loss take a slot each: 94 layers over 96 slots
            reps = int(re.search(r"\)\*(\d+)", layers).group(1))
            assert layers.startswith("E") and layers.endswith("L")
            assert reps == int(r["pp"]) * int(r["vpp"] or 1) - 2, r["id"]


def test_megatron_count_gives_the_published_rate_of_the_timed_rows():
    """The H100 rows publish a step time and a per-GPU rate: Megatron-LM's FLOP count (the
    script's transcription) turns one into the other within 1 % (246.2 against 245 on the first
    row, 0.5 %: more than the step's rounding to 0.1 s, 0.25 %; the others within 0.2 %)."""
    for row in GEN.H100_TABLE:
        line, gbs, step, tf = row[0], row[12], row[15], row[16]
        rate = GEN.megatron_flops_per_sequence(4096) * gbs / (step * 256) / 1e12
        assert abs(rate / tf - 1) <= 0.01, (line, rate, tf)


def test_layout_spells_the_account_for_embedding_and_loss_split():
    assert GEN.layout(8, 4) == "Ett|(ttt|)*30ttL"
    assert GEN.layout(32, 3) == "E|(t|)*94L"
    assert GEN.layout(8, 1) == "Et*11|(t*12|)*6t*11L"
    assert GEN.layout(1, 1) == ""


def test_fsdp_row_runs_the_commands_tp():
    """The Megatron-FSDP row's table says TP 2 (DP 128, GA 4), its launch command TP=1. At TP 2
    Megatron-FSDP's per-micro-batch traffic (two 16-bit gathers, one fp32 reduce-scatter of
    every parameter; the experts' 28.4e9 elements a GPU over EDP 32, one GPU a node) needs
    18.2 s a step at the table's 8x50 GB/s line rate with no compute at all: more than the
    17.6 s published. At TP 1 (GA 2) it needs 9.1 s. So the row is the command's layout."""
    assert GEN.fsdp_nic_floor_s(2, 8, 4) == pytest.approx(18.23, abs=0.01)
    assert GEN.fsdp_nic_floor_s(1, 8, 2) == pytest.approx(9.12, abs=0.01)
    # hand count of the dominant term: 16 experts x 3 x 4096 x 1536 x 94 layers, 31/32 of it
    # through each GPU's port, 8 B an element a micro-batch, 4 micro-batches, 50 GB/s
    experts = 16 * 3 * 4096 * 1536 * 94
    assert GEN.fsdp_nic_floor_s(2, 8, 4) > 4 * 8 * experts * 31 / 32 / 50e9
    row = next(r for r in csv.DictReader(FILE.open()) if "fsdp" in r["id"])
    assert (row["tp"], row["sequence_parallel"], row["zero_stage"]) == ("1", "0", "3")
    assert float(row["measured_iteration_s"]) < GEN.fsdp_nic_floor_s(2, 8, 4)


def test_only_the_fsdp_row_states_the_unfused_weight_gradient():
    """The FSDP row's command says --no-gradient-accumulation-fusion (run_235b.sh @8017e11); no
    other command, script or yaml names it, so only that row's cell is 0 and the others are left
    to Megatron-LM's default (fused). The 0 reaches the run: Megatron-FSDP's post-backward copy
    into the main_grad bucket is priced (``megatron_fsdp.applies``)."""
    rows = list(csv.DictReader(FILE.open()))
    cells = {r["id"]: r["gradient_accumulation_fusion"] for r in rows}
    fsdp = [k for k in cells if k.endswith("-fsdp")]
    assert len(fsdp) == 1 and cells[fsdp[0]] == "0"
    assert all(v == "" for k, v in cells.items() if k not in fsdp)
    assert GEN.NO_FUSION_FLAG in GEN.H100_COMMANDS[17]
    assert sum(GEN.NO_FUSION_FLAG in c for c in GEN.H100_COMMANDS.values()) == 1
    row = next(r for r in rows if r["id"] == fsdp[0])
    assert megatron_fsdp.applies(row_config(row))
