"""DeepSpeed and Megatron-DeepSpeed runs from sources trainsim had not seen
(benchmarks/training_deepspeed.csv, issue 17): DeepSpeed's Azure blog (ZeRO-3, 2022), the ZeRO++
tutorial's ZeRO-3 baseline log (2023), microsoft/Megatron-DeepSpeed's rebase README (2023) and
its DeepSpeed4Science long-sequence table (2023), and the DeepSpeed-MoE blog's dense row (2021).
Each measured time re-derived from the published figure (every row predicted:
tests/test_training_files.py)."""

from __future__ import annotations

from pathlib import Path

from helpers import training_rows

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "benchmarks" / "training_deepspeed.csv"
GPT2_VOCAB = 50257  # the GPT-2 BPE every source's script loads (gpt2-vocab.json)

# row id -> published TFLOP/s per GPU (Megatron-DeepSpeed's formula), or samples/s ('sps')
PUBLISHED = {
    "dsazure-175b-s512-256gpu-mbs32": 204.49, "dsazure-530b-512gpu-mbs8": 170.42,
    "dsazure-530b-1024gpu-mbs8": 171.37,
    "mdsrebase-13b-v100-128-before": 50, "mdsrebase-13b-v100-128-after": 55.6,
    "mdsrebase-1.3b-v100-16": 23.11, "mdsrebase-125m-a100-8": 25,
    "mdsrebase-125m-a100-8-flash1": 32, "mdsrebase-2.7b-a100-8-flash1": 121,
    "mdsrebase-2.7b-a100-8-flash2": 132,
    **{f"ds4sci-longseq-30b-{k}k-new": v for k, v in
       [(2, 68), (4, 80), (8, 86), (16, 92), (32, 100), (64, 106), (128, 119), (256, 94)]},
    "ds4sci-longseq-30b-2k-old": 25, "ds4sci-longseq-30b-4k-old": 28,
}
SAMPLES_PER_S = {"dsmoe-blog-6.7b-dense-128": 70}
LOGGED_MS = {"zeropp-tutorial-18b-zero3-64gpu": 9955.9}


def megatron_ds_flops(b: int, s: int, layers: int, h: int, vocab: int) -> float:
    """FLOPs per iteration as Megatron-DeepSpeed logs them with activation checkpointing
    (megatron/training.py @ 62bc4562, megatron/utils.py throughput_calculator @ cc3a94c6;
    the Azure blog's 'FLOPs/GPU = 96 * B * s * l * h2 * (1 + s/6h + V/(16*l*h))')."""
    return 24 * 4 * b * s * layers * h * h * (1 + s / (6 * h) + vocab / (16 * layers * h))


def padded_vocab(tp: int) -> int:
    """Megatron's _vocab_size_with_padding: a multiple of make-vocab-size-divisible-by (128) x tp."""
    multiple = 128 * tp
    return -(-GPT2_VOCAB // multiple) * multiple


def test_times_re_derived_from_the_published_figures():
    rows = training_rows(FILE)
    assert {r["id"] for r in rows} == set(PUBLISHED) | set(SAMPLES_PER_S) | set(LOGGED_MS)
    for r in rows:
        rid, measured = r["id"], float(r["measured_iteration_s"])
        assert r["framework"] in ("deepspeed", "megatron-deepspeed") and r["dtype"] == "fp16"
        assert int(r["vocab_size"]) == padded_vocab(int(r["tp"])), rid
        assert r["recompute"] == "full" and int(r["ffn_hidden_size"]) == 4 * int(r["hidden_size"])
        if rid in PUBLISHED:
            tflops = PUBLISHED[rid]
            flops = megatron_ds_flops(int(r["global_batch_size"]), int(r["seq_length"]),
                                      int(r["num_layers"]), int(r["hidden_size"]),
                                      int(r["vocab_size"]))
            expected = flops / (tflops * 1e12 * int(r["num_gpus"]))
            assert f"published {tflops} TFLOP" in r["note"], rid
        elif rid in SAMPLES_PER_S:
            expected = int(r["global_batch_size"]) / SAMPLES_PER_S[rid]
        else:
            expected = LOGGED_MS[rid] / 1000
            # the log's own 'TFLOPs: 7.65' confirms shape, vocab and GPU count
            flops = megatron_ds_flops(64, 512, 40, 6144, padded_vocab(1))
            assert round(flops / (expected * 1e12 * int(r["num_gpus"])), 2) == 7.65
        assert abs(measured - expected) <= 1e-4 * expected + 5e-5, (rid, measured, expected)
