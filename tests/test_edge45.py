"""edge45: three silent or misleading input edges of the attention kernels closed.

- FlashAttention-4 on compute capability 12.x (consumer / workstation Blackwell) skips its
  head-width check; its kernels there need the tiles to fit 99 KiB of shared memory
  (``config.validity.flash4_sm120_problem``): wider heads are refused, not priced.
- A kernel-validation attention row was priced as a 16-bit kernel whatever its dtype, GPU or
  head: fp8/fp32 rows, FlashAttention-3 on an A100, FA4 at heads it refuses are now one-line
  row failures (``config.validity.attention_row_problem``).
- A sliding-window model whose heads Transformer Engine runs on its own unfused attention was
  refused with a fix naming the fused kernels that had just refused those heads; the refusal
  now names the heads as the cause (``catalog.attention_rules.window_attention_problem``).

Each fails on the previous src; the cases beside them check that what ran still runs.
"""

from __future__ import annotations

import copy
import csv
import re
import warnings
from pathlib import Path

import pytest

from trainsim.catalog import gpu as catalog_gpu
from trainsim.catalog import run_config_from_dict
from trainsim.config.validity import (
    FLASH4_SM120_SMEM_BYTES,
    attention_row_problem,
    flash4_head_problem,
    flash4_sm120_smem_bytes,
)
from trainsim.errors import ConfigError
from trainsim.simulator import simulate
from trainsim.validate.kernels import predict_kernel_row

SM120_GPU = {"name": "rtx-pro-6000-like", "peak_tflops": {"fp32": 126, "bf16": 504, "fp8": 1008,
                                                         "fp4": 2016},
             "hbm_gib": 96, "hbm_gbyte_s": 1792, "nvlink_gbyte_s": 64, "num_sms": 188,
             "l2_mib": 128, "tdp_w": 600, "compute_capability": 120, "pcie_only": True,
             "source": "test: a 12.x GPU file"}
RUN = {"model": {"hidden_size": 2048, "num_layers": 2, "num_attention_heads": 16,
                 "vocab_size": 32000, "head_dim": 128},
       "parallel": {}, "training": {"global_batch_size": 4, "seq_length": 2048,
                                    "attention": "flash4"},
       "cluster": {"gpu": SM120_GPU, "num_gpus": 1, "gpus_per_node": 1}}


def _run(head_dim: int) -> dict:
    raw = copy.deepcopy(RUN)
    raw["model"]["head_dim"] = head_dim
    return raw


# ------------------------------------------------------------------ FA4 on 12.x


def test_sm120_shared_memory_counts_follow_can_implement():
    # 128-wide heads: Q 128x128 + K, V 64x128 (forward); Q, dO, K, V 64x128 (backward), 2 bytes
    assert flash4_sm120_smem_bytes(128, 128) == (65536, 65536)
    # up to 64 wide: K/V tiles of 128 keys forward, two stages of Q and dO backward
    assert flash4_sm120_smem_bytes(64, 64) == (49152, 49152)
    assert FLASH4_SM120_SMEM_BYTES == 99 * 1024


@pytest.mark.parametrize("qk,v,ok", [(128, 128, True), (192, 192, True), (192, 128, True),
                                     (200, 200, False), (256, 256, False), (100, 100, False)])
def test_flash4_on_12x_takes_heads_whose_tiles_fit(qk, v, ok):
    assert (flash4_head_problem(qk, v, 120) is None) is ok
    assert (flash4_head_problem(qk, v, 121) is None) is ok  # DGX Spark's GB10 is 12.1


def test_flash4_on_12x_wide_head_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"training.attention=flash4 on compute capability "
                                          r"12.x .* not \(256, 256\)"):
        run_config_from_dict(_run(256))


def test_flash4_on_12x_narrow_head_still_runs():
    assert simulate(run_config_from_dict(_run(128))).iteration_time_s > 0


def test_flash4_elsewhere_keeps_its_rules():
    assert flash4_head_problem(256, 256, 100) is None      # Blackwell's dedicated 256 kernel
    assert flash4_head_problem(256, 256, 90) is None       # Hopper: 8 to 256
    assert flash4_head_problem(320, 320, 90) is not None


# ------------------------------------------------------------------ kernel rows

KERNELS = Path(__file__).resolve().parents[1] / "src/trainsim/data/validation/kernels_published.csv"  # bundled copy


def _row(**cells) -> dict:
    with open(KERNELS, newline="") as f:
        base = next(r for r in csv.DictReader(f) if r["kind"] == "attention_fwd")
    row = dict(base, note="", id="edge45")
    row.update({k: str(v) for k, v in cells.items()})
    return row


@pytest.mark.parametrize("cells,match", [
    ({"implementation": "flash3", "dtype": "fp8"}, r"column 'dtype'='fp8'.*forward only"),
    ({"implementation": "flash2", "dtype": "fp8"}, r"FlashAttention-2 runs fp16 and bf16 only"),
    ({"implementation": "cudnn", "dtype": "fp32"}, r"only 16-bit"),
    ({"implementation": "flash3", "gpu": "a100-sxm-80gb"}, r"compute capability 9.0"),
    ({"implementation": "cudnn", "gpu": "mi300x"}, r"runs on NVIDIA GPUs only"),
    ({"implementation": "flash4", "head_dim": 320}, r"flash4 trains on Hopper"),
    ({"implementation": "flash2", "head_dim": 512}, r"at most 256"),
    ({"implementation": "flash2", "kind": "attention_bwd", "gpu": "v100-sxm-32gb"},
     r"compute capability 8.0"),
])
def test_attention_row_a_kernel_does_not_run_fails_alone(cells, match):
    res = predict_kernel_row(_row(**cells), compute_db=None)
    assert res.error is not None and "\n" not in res.error
    assert re.search(match, res.error), res.error


@pytest.mark.parametrize("cells", [
    {"implementation": "flash3", "dtype": "bf16/fp16", "head_dim": 256},
    {"implementation": "flash4", "gpu": "b200-sxm-180gb", "kind": "attention_bwd"},
    {"implementation": "flash4", "gpu": "a100-sxm-80gb"},   # FA4's forward runs on 8.x
    {"implementation": "flash2", "dtype": "fp16", "head_dim": 72},
])
def test_attention_rows_the_kernels_run_are_still_priced(cells):
    res = predict_kernel_row(_row(**cells), compute_db=None)
    assert res.error is None and res.predicted > 0


def test_attention_row_problem_is_none_for_a_plain_bf16_row():
    assert attention_row_problem("flash3", "bf16", 128, catalog_gpu("h100-sxm-80gb"), True) is None


# ------------------------------------------------------------------ window on TE's unfused


@pytest.mark.parametrize("gpu,head_dim", [("h100-sxm-80gb", 320), ("mi300x", 512)])
def test_window_on_te_unfused_fallback_names_the_heads(gpu, head_dim):
    raw = {"model": {"hidden_size": 2048, "num_layers": 2, "num_attention_heads": 8,
                     "vocab_size": 32000, "head_dim": head_dim, "sliding_window": 128},
           "parallel": {}, "training": {"global_batch_size": 8, "seq_length": 2048,
                                        "framework": "megatron-core"},
           "cluster": {"gpu": gpu, "num_gpus": 8, "gpus_per_node": 8}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ConfigError) as err:
            run_config_from_dict(raw)
    text = str(err.value)
    assert text.startswith("model.sliding_window=128: these heads run on Transformer Engine's "
                           "UnfusedDotProductAttention")
    assert "set training.attention" not in text  # no fused kernel that refuses them suggested


# ------------------------------------------------------------------ interleaving, too few micro-batches


def test_interleaving_with_fewer_micro_batches_than_pp_names_the_batch_not_an_unset_field():
    raw = {"model": {"hidden_size": 256, "num_layers": 8, "num_attention_heads": 4,
                     "vocab_size": 1024},
           "parallel": {"pp": 2, "vpp": 2},
           "training": {"global_batch_size": 4, "seq_length": 512, "framework": "megatron-core"},
           "cluster": {"gpu": "h100-sxm-80gb", "num_gpus": 8, "gpus_per_node": 8}}
    with pytest.raises(ConfigError) as err:
        run_config_from_dict(raw)  # dp 4, one micro-batch a step
    text = str(err.value)
    assert text.startswith("interleaved 1F1B (parallel.vpp=2) needs at least pp=2 micro-batches")
    assert "microbatch_group_size_per_vp_stage" not in text
    raw["training"]["global_batch_size"] = 8
    assert simulate(run_config_from_dict(raw)).iteration_time_s > 0
