"""torchao's published float8 / MX training benchmarks (benchmarks/training_torchao.csv, issue 17):
torchtitan Llama3-8B on one node of 8 H100, MI300X and B200 limited to 750 W. The file's seconds
re-derived from the tables' tokens/s, the power-limited B200 entry the B200 rows need, the
torchtitan rule that only per-tensor fp8 weights are all-gathered in fp8 (every row predicts, its
time and memory, no bound on the error: tests/test_training_files.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import training_rows

from trainsim import catalog, run_config_from_dict
from trainsim.config.cluster import power_limited_rate
from trainsim.workload.fp8_gather import fp8_weights_gathered

ROOT = Path(__file__).resolve().parents[1]
AO = ROOT / "benchmarks" / "training_torchao.csv"

# (row id suffix) -> (GPU, published median tokens/s, published peak memory): the H100 table of
# torchao/float8/README.md @ 8c81863ba, the MI300X table @ 853f87d1b, the B200 table of
# torchao/prototype/mx_formats/README.md @ d8bb51f63
PUBLISHED = {
    "ao2503-llama3-8b-h100-8-bf16": ("h100-sxm-96gb-500w", 6150, 47.65),
    "ao2503-llama3-8b-h100-8-fp8-tensorwise": ("h100-sxm-96gb-500w", 7689.5, 47.77),
    "ao2508-llama3-8b-mi300x-8-bf16": ("mi300x", 5376.5, 39.09),
    "ao2508-llama3-8b-mi300x-8-fp8-tensorwise": ("mi300x", 6166.0, 39.07),
    "ao2508-llama3-8b-b200-750w-8-bf16": ("b200-sxm-180gb-750w", 8307.5, 33.71),
    "ao2508-llama3-8b-b200-750w-8-fp8-tensorwise": ("b200-sxm-180gb-750w", 10417.0, 33.38),
    "ao2508-llama3-8b-b200-750w-8-mxfp8-cublas": ("b200-sxm-180gb-750w", 9969.0, 33.88),
    "ao2508-llama3-8b-b200-750w-8-mxfp8-cublas-rceil": ("b200-sxm-180gb-750w", 9642.0, 33.88),
}
COMMITS = {"h100": "8c81863ba85cce742244c0151c6683c5696bbe04",
           "mi300x": "853f87d1bd56d8d6c980a518cf9fa08fbb20135c",
           "b200": "d8bb51f63143188272e116c820d5f303c7017781"}


def test_file_holds_the_published_tables_converted_to_seconds():
    """One row per expressible table line; seconds = local batch 1 x 8192 tokens / the median
    tokens/s torchtitan logs per GPU; memory the logged max_reserved GiB."""
    rows = training_rows(AO)
    assert {r["id"] for r in rows} == set(PUBLISHED)
    for r in rows:
        gpu, tps, mem = PUBLISHED[r["id"]]
        assert r["gpu"] == gpu and r["framework"] == "torchtitan", r["id"]
        family = re.match(r"ao25\d\d-llama3-8b-(h100|mi300x|b200)", r["id"]).group(1)
        assert f"@ {COMMITS[family]}" in r["source"], r["id"]
        assert (r["num_gpus"], r["global_batch_size"], r["micro_batch_size"]) == ("8", "8", "1")
        assert r["seq_length"] == "8192" and r["options"] == "compile", r["id"]
        assert r["recompute"] == "selective" and r["zero_stage"] == "3", r["id"]
        assert float(r["measured_iteration_s"]) == pytest.approx(8192 / tps, abs=1e-6)
        assert float(r["measured_peak_memory_gib"]) == mem and r["memory_kind"] == "reserved"
        assert f"published median {tps} tokens/s per GPU" in r["note"], r["id"]
        want = ("" if "bf16" in r["id"] else "mxfp8" if "mxfp8" in r["id"] else "current")
        assert r["fp8_recipe"] == want and r["dtype"] == ("bf16" if not want else "fp8")


def test_power_limited_b200_entry_is_the_b200_at_750_w():
    """b200-sxm-180gb-750w: the B200's silicon and memory, 750 W of its 1000 W TDP (the mx
    README's 'limited to 750W'): matmul rate x (750/1000)^0.6, bandwidth unchanged; the plain
    names still mean the 1000 W part."""
    g, b200 = catalog.gpu("b200-sxm-180gb-750w"), catalog.gpu("b200-sxm-180gb")
    assert g.power_limit_w == 750 and g.tdp_w == b200.tdp_w == 1000
    assert g.peak_flops == b200.peak_flops and g.hbm_bw_Bps == b200.hbm_bw_Bps
    assert g.mamf_fraction == b200.mamf_fraction and g.hbm_bytes == b200.hbm_bytes
    assert g.power_scale == pytest.approx(0.75 ** 0.6) == power_limited_rate(750, 1000)
    assert b200.power_scale == 1.0
    for name in ("B200", "NVIDIA B200", "b200-180gb", "B200 SXM"):
        assert catalog.gpu(name).name == "b200-sxm-180gb", name


def _titan(recipe: str, dtype: str = "fp8", version: str = "2025-08"):
    return run_config_from_dict({
        "model": "llama3-8b",
        "parallel": {"zero_stage": 3},
        "training": {"global_batch_size": 8, "micro_batch_size": 1, "seq_length": 8192,
                     "dtype": dtype, "fp8_recipe": recipe, "framework": "torchtitan",
                     "framework_version": version},
        "cluster": {"gpu": "b200-sxm-180gb", "num_gpus": 8}})


def test_torchtitan_gathers_fp8_weights_for_per_tensor_scaling_only():
    """torchtitan's Float8 converter all-gathers fp8 weights only with its default tensorwise
    (current) scaling; its MX converter has no such option: mxfp8 weights are gathered in bf16
    (components/quantization/float8.py and mx.py @ 6fc499f6)."""
    assert _titan("current").training.fp8_param_gather
    assert fp8_weights_gathered(_titan("current"))
    assert not fp8_weights_gathered(_titan("mxfp8"))
    assert not fp8_weights_gathered(_titan("current", dtype="bf16"))
