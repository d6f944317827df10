"""Plain-PyTorch (framework ``pytorch``) training rows from fms-fsdp's README
(benchmarks/training_pytorch.csv, issue 17): the file's format, its conversions and that every
row is simulated (tests/test_training_files.py)."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import training_rows

from trainsim.catalog.frameworks import framework_profile

ROOT = Path(__file__).resolve().parents[1]
PYTORCH = ROOT / "benchmarks" / "training_pytorch.csv"


def test_pytorch_file_has_plain_pytorch_rows():
    for r in training_rows(PYTORCH):
        assert r["framework"] == "pytorch" and r["framework_version"] in ("2.3", "2.4"), r["id"]
        assert "foundation-model-stack/fms-fsdp README.md @ " in r["source"]
        assert r["zero_stage"] == "3" and r["tp"] == r["pp"] == "1" and r["dtype"] == "bf16"
        assert ("compile" in r["options"].split(";")) == r["id"].endswith("-compile")


def test_iteration_time_is_batch_tokens_over_published_tokens_per_gpu():
    """No gradient accumulation: global batch = per-GPU batch x GPUs, and one iteration is
    per-GPU batch x 4096 tokens at the published tokens/s/GPU."""
    for r in training_rows(PYTORCH):
        tps = float(re.match(r"published (\d+) tokens/s/GPU", r["note"]).group(1))
        mb = int(r["micro_batch_size"])
        assert int(r["global_batch_size"]) == mb * int(r["num_gpus"])
        assert r["seq_length"] == "4096"
        assert abs(float(r["measured_iteration_s"]) - mb * 4096 / tps) < 1e-4, r["id"]


def test_recomputed_blocks_follow_the_published_hfu_over_mfu():
    """A recomputed forward adds a third of the forward+backward FLOPs: p = 3 (HFU/MFU - 1) of
    the blocks. Compiled rows recompute an evenly spaced fraction p (hand check: 13B A100
    0.69/0.61 -> p 0.39 -> 16 of 40); eager rows every k-th block, k = round(1/p) (ac_handler.py
    at 5e522b4; hand check: 13B A100 0.59/0.51 -> p 0.47 -> every 2nd block, 20 of 40)."""
    layers_of = {"llama2-13b": 40, "codellama-34b": 48, "llama2-70b": 80}
    checked = {"fraction": 0, "every_kth": 0}
    for r in training_rows(PYTORCH):
        if not r["recompute_num_layers"]:
            continue
        layers = layers_of[r["model"]]
        if m := re.search(r"MFU ([\d.]+) HFU ([\d.]+) give p = 3 \(HFU/MFU - 1\) = ([\d.]+), "
                          r"(\d+) of (\d+)", r["note"]):
            mfu, hfu = float(m.group(1)), float(m.group(2))
            p = 3 * (hfu / mfu - 1)
            assert int(r["recompute_num_layers"]) == int(m.group(4)) == round(p * layers)
            assert int(m.group(5)) == layers, r["id"]
            checked["fraction"] += 1
        elif m := re.search(r"HFU/MFU ([\d.]+)/([\d.]+) give p = ([\d.]+), so every (\d+)\w\w "
                            r"block: (\d+) of (\d+)", r["note"]):
            hfu, mfu = float(m.group(1)), float(m.group(2))
            p = 3 * (hfu / mfu - 1)
            k = round(1 / p)
            assert int(m.group(4)) == k and int(m.group(6)) == layers, r["id"]
            assert int(r["recompute_num_layers"]) == int(m.group(5)) == layers // k, r["id"]
            checked["every_kth"] += 1
        else:
            raise AssertionError(f"{r['id']}: recompute_num_layers without a derivation")
        assert abs(float(m.group(3)) - p) < 0.006, r["id"]  # the note's p, as rounded
    assert checked == {"fraction": 4, "every_kth": 2}


def test_profile_runs_these_rows_with_fsdp1_and_sdpa():
    for version in ("2.3", "2.4"):
        prof = framework_profile("pytorch", version)
        assert prof.defaults["zero_stage_engines"]["3"] == "fsdp1"
        assert prof.defaults["attention"] == "sdpa"
