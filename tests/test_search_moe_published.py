"""Acceptance on published mixture-of-experts runs (slow, issue 20): the search's best
configuration uses expert parallelism and is at least as fast as the published layout, which is
simulated and ranked beside it.

    pytest -m slow tests/test_search_moe_published.py

Published layouts (each with the settings its source gives that the search does not vary):
- DeepSeek-V3 on 2,048 H800 (arXiv:2412.19437 §3.2-3.3): PP 16 (DualPipe), EP 64, TP 1,
  ZeRO-1, in FP8 with the report's memory recipe (as ``examples/deepseek-v3-h800.yaml``; the
  61 layers balanced over the 16 stages, where the report puts 4 on the first and 1 + MTP on
  the last).
- Qwen3-235B-A22B on 256 H100, Megatron-Bridge performance config
  ``QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_BF16_V1`` (scripts/performance/configs/qwen/
  qwen3_workload_base_configs.py): TP 2, PP 8, VPP 4, EP 32, global batch 2048, sequence 4096,
  expert all-to-all overlap, 16-bit gradient reduction, no recompute; Bridge's DDP and
  communication-overlap defaults (gradient reduce and parameter gather overlapped, p2p
  overlapped as it turns on for interleaving).
- Mixtral-8x22B on 128 H100: Megatron-Bridge has no Mixtral recipe; NeMo 2's
  ``nemo/collections/llm/recipes/mixtral_8x22b.py`` (16 nodes): TP 2, PP 4, VPP 14, CP 2, EP 8,
  SP, distributed optimizer with gradient reduce and parameter gather overlapped, global
  batch 512, sequence 4096.

Where trainsim's memory estimate puts a published layout above the GPU's memory, the layout is
still simulated and ranked (after every configuration that fits); that check is marked as the
known over-estimate it is, so it turns into a failure to look at once the estimate fits.
"""

from __future__ import annotations

import pytest

from trainsim.search import search
from trainsim.search.cli import build_base, parse_reference

pytestmark = pytest.mark.slow

DEEPSEEK_RECIPE = ("training.fp8_recipe=blockwise", "training.activation_func_fp8_input_store=true",
                   "training.attention_output_e5m6=true",  # report §3.3.3
                   "training.use_precision_aware_optimizer=true", "training.exp_avg_dtype=bf16",
                   "training.exp_avg_sq_dtype=bf16", "model.moe_router_group_topk=4",
                   "parallel.recompute=selective",
                   "parallel.recompute_modules=[layernorm,mla_up_proj,moe_act]",
                   "parallel.moe_dispatch_fp8=true",
                   # ZeRO-1 (report §3.2); the precision-aware optimizer needs it (b0ee795)
                   "parallel.distributed_optimizer=true")
CASES = {
    # name: (model, gpu, gpus, global batch, seq, dtype, --set overrides, reference,
    #        fits: True, or why the estimate puts the published layout above the GPU's memory)
    "deepseek-v3": ("deepseek-v3", "h800-sxm-80gb", 2048, 15360, 4096, "fp8", DEEPSEEK_RECIPE,
                    # the report's node-limited dispatch kernels, open-sourced as DeepEP
                    ("tp=1,pp=16,ep=64,moe_token_dispatcher_type=deepep,"
                    "pipeline_schedule=dualpipe,distopt=1,recompute=selective,"
                    "overlap_grad_reduce=1,overlap_p2p_comm=1,"
                    "mb=1"),
                    True),
    "qwen3-235b-a22b": ("qwen3-235b-a22b", "h100-sxm-80gb", 256, 2048, 4096, "bf16",
                        ("training.grad_reduce_in_fp32=false",),
                        ("tp=2,pp=8,vpp=4,ep=32,sp=1,distopt=1,moe_overlap_ep_comm=1,"
                         "overlap_grad_reduce=1,overlap_param_gather=1,overlap_p2p_comm=1,mb=1"),
                        True),
    "mixtral-8x22b": ("mixtral-8x22b", "h100-sxm-80gb", 128, 512, 4096, "bf16", (),
                      ("tp=2,pp=4,vpp=14,cp=2,ep=8,sp=1,distopt=1,overlap_grad_reduce=1,"
                       "overlap_param_gather=1,mb=1"), True),
}


@pytest.mark.parametrize("name", list(CASES))
def test_moe_search_uses_ep_and_beats_the_published_layout(name, executor, request):
    model, gpu, gpus, batch, seq, dtype, sets, ref, fits = CASES[name]
    base = build_base(model, gpu, gpus, batch, seq, 8, 400.0, dtype, sets)
    r = search(base, [gpus], top_k=10, executor=executor,
               reference=parse_reference(ref, base, gpus))
    assert r.best is not None and r.reference is not None
    ref = r.reference.evaluation
    print(f"\n{name}: best {r.best.label} {r.best.iteration_time_s:.2f} s; published "
          f"{ref.label} {ref.iteration_time_s:.2f} s, {ref.peak_memory_bytes / 2**30:.1f} GiB, "
          f"rank {r.reference.rank}{'' if r.reference.exact else '+'}")
    assert r.best.candidate.mem.ep > 1
    assert r.best.fits
    assert r.best.iteration_time_s <= r.reference.evaluation.iteration_time_s
    assert r.reference.rank >= 1
    if fits is not True:  # the reason the published layout is estimated not to fit
        request.applymarker(pytest.mark.xfail(strict=True, reason=fits))
    assert r.reference.evaluation.fits
